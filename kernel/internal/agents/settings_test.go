package agents

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A base_url set for a built-in points its endpoint variable there, sends
// each key to that endpoint alone (never still to the vendor's host), and
// makes the profile wait for approval; taking it back restores the
// profile as it ships.
func TestSetBaseURL(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	set, err := Load(os.DirFS(builtinDir), home)
	if err != nil {
		t.Fatal(err)
	}
	shipped, _ := set.Get("codex")
	p, err := SetSetting(home, set, "codex", "base_url", "http://127.0.0.1:11434/v1")
	if err != nil {
		t.Fatal(err)
	}
	set, err = Load(os.DirFS(builtinDir), home)
	if err != nil {
		t.Fatal(err)
	}
	got, err := set.Get("codex")
	if err != nil || got.Hash() != p.Hash() {
		t.Fatalf("read back: %v %+v", err, got)
	}
	if got.Env["CODEX_CONFIG"] != `{"openai_base_url":"http://127.0.0.1:11434/v1"}` || !slices.Equal(got.Keys["OPENAI_API_KEY"], []string{"127.0.0.1:11434"}) || slices.Contains(got.Hosts, "api.openai.com") || !slices.Contains(got.Hosts, "127.0.0.1:11434") {
		t.Fatalf("codex with base_url: %+v", got)
	}
	if err := CheckApproved(home, got); !errors.Is(err, ErrNotApproved) {
		t.Fatalf("a built-in with a setting runs unapproved: %v", err)
	}
	if err := Approve(home, got, set.Profiles); err != nil {
		t.Fatal(err)
	}
	if err := CheckApproved(home, got); err != nil {
		t.Fatal(err)
	}
	// Set anew from the set as loaded: the setting replaces, never stacks.
	if p, err = SetSetting(home, set, "codex", "base_url", "https://llm.corp.example/v1"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Keys["OPENAI_API_KEY"], []string{"llm.corp.example:443"}) || slices.Contains(p.Hosts, "127.0.0.1:11434") {
		t.Fatalf("set again: %+v", p)
	}
	if _, err := SetSetting(home, set, "codex", "base_url", ""); err != nil {
		t.Fatal(err)
	}
	set, _ = Load(os.DirFS(builtinDir), home)
	if back, _ := set.Get("codex"); back.Hash() != shipped.Hash() || back.Setting != "" {
		t.Fatalf("taken back: %+v", back)
	}
	for raw, want := range map[string]string{
		"http://10.0.0.5:8000":       "plain http only to this machine's loopback",
		"ftp://localhost:4000":       "http or https",
		"http://u:p@localhost:4000":  "no user",
		"localhost:4000":             "is not a URL",
		"http://localhost:99999":     "does not name a host and port",
		"https://llm.example.com/?k": "no user, query",
	} {
		if _, err := SetSetting(home, set, "claude-code", "base_url", raw); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("base_url=%s: %v, want %q", raw, err, want)
		}
	}
	if _, err := SetSetting(home, set, "claude-code", "model", "x"); !errors.Is(err, ErrSetting) {
		t.Errorf("an unknown setting: %v", err)
	}
}

// A settings file naming no profile is said, and hides no profile.
func TestSettingForNoProfile(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if err := os.WriteFile(SettingsPath(home), []byte("[gone]\nbase_url = \"http://localhost:1\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	set, err := Load(os.DirFS(builtinDir), home)
	if err != nil || len(set.Skipped) != 1 || !strings.Contains(set.Skipped[0].Error(), `"gone"`) {
		t.Fatalf("%v %v", err, set.Skipped)
	}
	if _, err := set.Get("claude-code"); err != nil {
		t.Fatal(err)
	}
}

// A person's profile whose state overlaps a built-in's is refused by its
// own name, saying which built-in owns the path; the built-ins and the
// person's other profiles still load.
func TestOverlapWithABuiltinIsThePersonsProfile(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	toml := "[[agent]]\nname = \"mine\"\ncommand = [\"mine\"]\nstate = [\".claude/projects\"]\n\n[[agent]]\nname = \"fine\"\ncommand = [\"fine\"]\n"
	if err := os.WriteFile(PersonalPath(home), []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	set, err := Load(os.DirFS(builtinDir), home)
	if err != nil {
		t.Fatalf("one profile of the person's stopped every command: %v", err)
	}
	_, err = set.Get("mine")
	if err == nil || !strings.Contains(err.Error(), "mine") || !strings.Contains(err.Error(), `belongs to the agent "claude-code"`) {
		t.Fatalf("mine: %v", err)
	}
	for _, n := range []string{"claude-code", "codex", "gemini", "fine"} {
		if _, err := set.Get(n); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
}

// An installed package whose engines.node asks for more than the node here
// is said; one that asks for less, or a range Kule does not read, is not.
func TestNodeWarning(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	pkg := Package{Runner: "npx", Name: "@scope/agent", Version: "1.0.0"}
	dir := filepath.Join(PackageDir(root, pkg), "node_modules", "@scope", "agent")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for engines, want := range map[string]string{
		`">=22"`:       "asks for node >=22 and this machine has node 20",
		`">=18.17"`:    "",
		`"^20 || ^22"`: "",
		`">= 22 < 24"`: "",
	} {
		if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"engines":{"node":`+engines+`}}`), 0o644); err != nil {
			t.Fatal(err)
		}
		got := nodeWarning(root, pkg, func() int { return 20 })
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("engines %s: %q, want %q", engines, got, want)
		}
	}
}

// A package that needs a newer Node than the machine has cannot start:
// the first screen lists it as missing and Launch refuses before it runs
// (with the check off, it would start and die with a stack trace).
func TestANodeTooOldIsMissingAndRefused(t *testing.T) {
	old := nodeVersion
	nodeVersion = func() int { return 20 }
	defer func() { nodeVersion = old }()
	p := Profile{Name: "needs22", Command: []string{"npx", "-y", "@scope/agent@1.0.0"}, Node: 22}
	root := t.TempDir()
	set := &Set{Profiles: []Profile{p}, Problems: map[string]error{}}
	if err := Approve(t.TempDir(), p, set.Profiles); err != nil {
		t.Fatal(err)
	}
	sts := Check(set, CheckOptions{KuleHome: t.TempDir(), PackagesRoot: root})
	if len(sts) != 1 || !slices.ContainsFunc(sts[0].Missing, func(m string) bool {
		return strings.Contains(m, "node 22 or newer: @scope/agent@1.0.0 needs it and this machine has node 20")
	}) {
		t.Errorf("the first screen: %+v", sts)
	}
	if sts[0].CanStart() {
		t.Error("an agent whose Node is too old can start here")
	}
	if _, err := Launch(context.Background(), p, root, false, io.Discard); !errors.Is(err, ErrNode) {
		t.Errorf("Launch on node 20: %v", err)
	}
	checkNode = false
	defer func() { checkNode = true }()
	if _, err := Launch(context.Background(), p, root, false, io.Discard); errors.Is(err, ErrNode) {
		t.Errorf("with the check off Launch still refuses for node: %v", err)
	}
	p.Node = 20
	if NodeNeed(p, root) != "" {
		t.Error("node 20 is enough for a package that needs 20")
	}
}

// With the home under /tmp (which the sandbox replaces with each task's
// own) the packages root moves to /var/tmp, and kule agents says what it
// cannot help: a root or a home still there.
func TestHomeUnderTmp(t *testing.T) {
	for p, want := range map[string]bool{"/tmp": true, "/tmp/x/y": true, "/tmpx": false, "/var/tmp/x": false} {
		if got := UnderTmp(p); got != want {
			t.Errorf("UnderTmp(%s) = %v", p, got)
		}
	}
	home, err := os.MkdirTemp("/tmp", "kule-home-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(home)
	t.Setenv("HOME", home)
	t.Setenv("XDG_DATA_HOME", "")
	root, err := PackagesRoot()
	if err != nil || UnderTmp(root) {
		t.Fatalf("packages root %s (%v) lies under /tmp", root, err)
	}
	p := Profile{Name: "a", Command: []string{"npx", "-y", "@scope/agent@1.0.0"}}
	set := &Set{Profiles: []Profile{p}, Problems: map[string]error{}}
	kh := t.TempDir()
	if err := Approve(kh, p, set.Profiles); err != nil {
		t.Fatal(err)
	}
	st := Check(set, CheckOptions{KuleHome: kh, PackagesRoot: filepath.Join(home, ".local/share/kule/packages"), Home: home})[0]
	if st.CanStart() || !slices.ContainsFunc(st.Missing, func(m string) bool { return strings.Contains(m, "the sandbox replaces /tmp with each task's own") }) {
		t.Errorf("a packages root under /tmp: %+v", st)
	}
	if !slices.ContainsFunc(st.Warnings, func(m string) bool { return strings.Contains(m, "your home "+home+" is under /tmp") }) {
		t.Errorf("a home under /tmp is not told: %+v", st.Warnings)
	}
}
