package main

import (
	"bytes"
	"github.com/kulehq/kule/kernel"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runIn(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	root := rootCommand()
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func TestRevealAndIsolationCommands(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "kule")
	t.Setenv("KULE_HOME", home)
	proj := filepath.Join(dir, "code", "proj")
	shared := filepath.Join(dir, "code", "shared")
	os.MkdirAll(proj, 0o755)
	os.MkdirAll(shared, 0o755)
	os.WriteFile(filepath.Join(proj, "go.mod"), []byte("module p\nreplace s => ../shared\n"), 0o644)

	out, err := runIn(t, "reveal", "--folder", proj)
	if err != nil || !strings.Contains(out, "(none)") || !strings.Contains(out, "../shared") || !strings.Contains(out, "named in go.mod") {
		t.Fatalf("reveal: %v\n%s", err, out)
	}
	if out, err := runIn(t, "reveal", "--folder", proj, "add", "../shared"); err != nil {
		t.Fatalf("reveal add: %v\n%s", err, out)
	}
	cfg, err := kernel.LoadSettings(home)
	if err != nil {
		t.Fatal(err)
	}
	realProj, _ := filepath.EvalSymlinks(proj)
	realShared, _ := filepath.EvalSymlinks(shared)
	if got := cfg.Sandbox.RevealsFor(realProj); len(got) != 1 || got[0] != realShared {
		t.Fatalf("stored reveals %v, want [%s]", got, realShared)
	}
	if _, err := runIn(t, "reveal", "--folder", proj, "add", "."); err == nil {
		t.Fatal("revealing the folder itself was accepted")
	}
	if out, err := runIn(t, "reveal", "--folder", proj, "remove", "../shared"); err != nil {
		t.Fatalf("reveal remove: %v\n%s", err, out)
	}
	if _, err := runIn(t, "reveal", "--folder", proj, "remove", "../shared"); err == nil {
		t.Fatal("removing twice was accepted")
	}

	for _, v := range []string{"on", "off"} {
		out, err := runIn(t, "isolation", "--accept-weaker", v)
		if err != nil || !strings.Contains(out, "accept weaker:   "+v) {
			t.Fatalf("isolation --accept-weaker %s: %v\n%s", v, err, out)
		}
		cfg, _ := kernel.LoadSettings(home)
		if cfg.Sandbox.AcceptWeaker != (v == "on") {
			t.Fatalf("stored accept_weaker = %v after %s", cfg.Sandbox.AcceptWeaker, v)
		}
	}
	if _, err := runIn(t, "isolation", "--accept-weaker", "maybe"); err == nil {
		t.Fatal("--accept-weaker maybe was accepted")
	}
}
