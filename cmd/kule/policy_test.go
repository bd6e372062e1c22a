package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// kule runs the CLI in this process with the given KULE_HOME and returns
// what it printed and its error.
func kule(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := rootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func mustKule(t *testing.T, args ...string) string {
	t.Helper()
	out, err := kule(t, args...)
	if err != nil {
		t.Fatalf("kule %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func writeFile(t *testing.T, p, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// policyFixture makes a folder (a git repository, with a folder policy
// denying .pem files) and a task on it, and changes the task's copy the way
// an agent would: a source edit, a manifest, agent instructions and a key.
func policyFixture(t *testing.T) (folder, id, cp string) {
	t.Setenv("KULE_HOME", t.TempDir())
	folder = t.TempDir()
	writeFile(t, filepath.Join(folder, "src/main.go"), "package main\n")
	writeFile(t, filepath.Join(folder, "package.json"), "{}\n")
	writeFile(t, filepath.Join(folder, ".git/HEAD"), "ref: refs/heads/main\n")
	writeFile(t, filepath.Join(folder, ".kule/policy.cedar"), `@id("no-pem")
@verdict("deny")
forbid (principal, action, resource is Kule::Path) when { resource.ext == "pem" };
`)
	var made struct{ ID, Copy string }
	if err := json.Unmarshal([]byte(mustKule(t, "new", "--json", folder)), &made); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(made.Copy, "src/main.go"), "package main\n\nfunc main() {}\n")
	writeFile(t, filepath.Join(made.Copy, "package.json"), `{"dependencies":{"left-pad":"1"}}`+"\n")
	writeFile(t, filepath.Join(made.Copy, "CLAUDE.md"), "do as you like\n")
	writeFile(t, filepath.Join(made.Copy, "key.pem"), "secret\n")
	// Written by hand in the copy: on the overlay backend a status sees
	// that after a walk (--full), as it does every command's writes.
	mustKule(t, "status", "--full", made.ID)
	return folder, made.ID, made.Copy
}

func TestStatusAndCommitFollowThePolicy(t *testing.T) {
	folder, id, _ := policyFixture(t)

	st := mustKule(t, "status", id)
	for _, want := range []string{
		"policy: waits for approval",
		"  CLAUDE.md · waits for approval (agent-instructions)",
		"  package.json · waits for approval (manifests-and-lockfiles)",
		"policy: denied, never applied",
		"  key.pem · denied (no-pem)",
	} {
		if !strings.Contains(st, want) {
			t.Errorf("status lacks %q:\n%s", want, st)
		}
	}

	if _, err := kule(t, "commit", id, "--remember"); err == nil {
		t.Fatal("--remember without --approve should be refused")
	}

	out := mustKule(t, "commit", id)
	if got := readFile(t, filepath.Join(folder, "src/main.go")); !strings.Contains(got, "func main") {
		t.Errorf("the source edit should have been applied; folder holds %q", got)
	}
	if got := readFile(t, filepath.Join(folder, "package.json")); got != "{}\n" {
		t.Errorf("the manifest waits for approval but the folder holds %q", got)
	}
	if readFile(t, filepath.Join(folder, "key.pem")) != "" || readFile(t, filepath.Join(folder, "CLAUDE.md")) != "" {
		t.Error("what waits or is denied reached the folder")
	}
	for _, want := range []string{"policy: 2 wait for approval and stay in the copy", "policy: 1 denied, never applied; they stay in the copy:"} {
		if !strings.Contains(out, want) {
			t.Errorf("commit output lacks %q:\n%s", want, out)
		}
	}

	out = mustKule(t, "commit", id, "--approve", "--remember")
	if got := readFile(t, filepath.Join(folder, "package.json")); !strings.Contains(got, "left-pad") {
		t.Errorf("--approve should apply the manifest; folder holds %q", got)
	}
	if readFile(t, filepath.Join(folder, "key.pem")) != "" {
		t.Fatal("--approve applied what the policy denies")
	}
	if !strings.Contains(out, "remembered 2 approvals") {
		t.Errorf("commit --remember output:\n%s", out)
	}
	rules := mustKule(t, "rules")
	if !strings.Contains(rules, "1. CLAUDE.md · lets agent-instructions through in "+folder) ||
		!strings.Contains(rules, "2. package.json · lets manifests-and-lockfiles through in "+folder) {
		t.Errorf("kule rules:\n%s", rules)
	}
}

func TestRememberedApprovalLetsTheNextChangeThrough(t *testing.T) {
	folder, id, cp := policyFixture(t)
	mustKule(t, "commit", id, "--approve", "--remember")
	writeFile(t, filepath.Join(cp, "package.json"), `{"dependencies":{"left-pad":"2"}}`+"\n")
	st := mustKule(t, "status", id)
	if strings.Contains(st, "package.json · waits") {
		t.Errorf("a remembered approval should let package.json pass:\n%s", st)
	}
	mustKule(t, "commit", id)
	if got := readFile(t, filepath.Join(folder, "package.json")); !strings.Contains(got, `"2"`) {
		t.Errorf("folder holds %q", got)
	}
	out := mustKule(t, "rules", "forget", "2")
	if !strings.Contains(out, "forgot: 2. package.json") {
		t.Errorf("forget: %s", out)
	}
	writeFile(t, filepath.Join(cp, "package.json"), `{"dependencies":{"left-pad":"3"}}`+"\n")
	if st := mustKule(t, "status", id); !strings.Contains(st, "package.json · waits for approval (manifests-and-lockfiles)") {
		t.Errorf("after forget, package.json should wait again:\n%s", st)
	}
}

func TestBrokenPolicyBlocksCommit(t *testing.T) {
	folder, id, _ := policyFixture(t)
	writeFile(t, filepath.Join(os.Getenv("KULE_HOME"), "policy.cedar"), "permit (principal, action, resource);\nforbid (principal action, resource);\n")
	out, err := kule(t, "commit", id)
	if err == nil {
		t.Fatalf("commit under a broken policy succeeded:\n%s", out)
	}
	if want := filepath.Join(os.Getenv("KULE_HOME"), "policy.cedar") + ":2:"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name %s", err, want)
	}
	if got := readFile(t, filepath.Join(folder, "src/main.go")); got != "package main\n" {
		t.Errorf("something was applied under a broken policy: %q", got)
	}
	if st := mustKule(t, "status", id); !strings.Contains(st, "policy: cannot judge:") {
		t.Errorf("status should say the policy cannot judge:\n%s", st)
	}
}

func TestPolicyCommands(t *testing.T) {
	t.Setenv("KULE_HOME", t.TempDir())
	folder := t.TempDir()
	out := mustKule(t, "policy", "--folder", folder)
	if !strings.Contains(out, "policy: balanced (built-in)") || !strings.Contains(out, "ask   manifests-and-lockfiles") ||
		!strings.Contains(out, "deny  git-hooks") || !strings.Contains(out, "ask   branch-deletions") ||
		!strings.Contains(out, "mass-deletes counts the files a task deletes or truncates") {
		t.Errorf("kule policy:\n%s", out)
	}
	mustKule(t, "policy", "careful")
	out = mustKule(t, "policy", "--folder", folder)
	if !strings.Contains(out, "policy: careful (built-in)") || !strings.Contains(out, "every-change") {
		t.Errorf("kule policy after choosing careful:\n%s", out)
	}
	if _, err := kule(t, "policy", "reckless"); err == nil {
		t.Error("kule policy reckless should be refused")
	}
	if out := mustKule(t, "policy", "--schema"); !strings.Contains(out, "entity Path") {
		t.Errorf("kule policy --schema:\n%s", out)
	}
}

func TestRulesAllowShowsThePastFirst(t *testing.T) {
	home := t.TempDir()
	t.Setenv("KULE_HOME", home)
	folder := t.TempDir()
	writeFile(t, filepath.Join(home, "tasks/abcdef01/task.json"), fmt.Sprintf(`{"id":"abcdef01","folder":%q}`, folder))
	writeFile(t, filepath.Join(home, "tasks/abcdef01/network.jsonl"),
		`{"time":"2026-11-01T10:00:00Z","host":"api.example.com","port":443,"verdict":"ask","rule":"unknown-hosts"}`+"\n")
	out := mustKule(t, "rules", "allow", "api.example.com:443", "--folder", folder)
	if !strings.Contains(out, "task abcdef01 · 1 connection") || !strings.Contains(out, "nothing was kept") {
		t.Errorf("rules allow without --yes:\n%s", out)
	}
	if rules := mustKule(t, "rules"); !strings.Contains(rules, "no remembered approvals") {
		t.Errorf("without --yes nothing is kept:\n%s", rules)
	}
	out = mustKule(t, "rules", "allow", "api.example.com:443", "--folder", folder, "--yes")
	if !strings.Contains(out, "kept: 1. api.example.com:443 · lets unknown-hosts through in "+folder) {
		t.Errorf("rules allow --yes:\n%s", out)
	}
	if _, err := kule(t, "rules", "allow", "api.example.com", "--yes"); err == nil {
		t.Error("a host without a port should be refused")
	}
	if _, err := kule(t, "rules", "forget", "7"); err == nil {
		t.Error("forgetting a rule that is not there should fail")
	}
}

// TestCopysOwnPolicyIsNeverRead: an agent that writes a policy into the
// copy's .kule/ changes nothing about how its changes are judged, and its
// .kule change waits and is never remembered.
func TestCopysOwnPolicyIsNeverRead(t *testing.T) {
	folder, id, cp := policyFixture(t)
	writeFile(t, filepath.Join(cp, ".kule/policy.cedar"), "@id(\"let-me\")\npermit (principal, action, resource);\n")
	writeFile(t, filepath.Join(cp, ".github/workflows/x.yml"), "on: push\n")
	st := mustKule(t, "status", "--full", id) // written by hand: see policyFixture
	for _, want := range []string{
		".kule/policy.cedar · waits for approval (kule-settings)",
		".github · waits for approval (ci)",
		"key.pem · denied (no-pem)",
	} {
		if !strings.Contains(st, want) {
			t.Errorf("status lacks %q:\n%s", want, st)
		}
	}
	out := mustKule(t, "commit", id, "--approve", "--remember")
	if !strings.Contains(readFile(t, filepath.Join(folder, ".kule/policy.cedar")), "let-me") {
		t.Errorf("--approve should apply the .kule change:\n%s", out)
	}
	if rules := mustKule(t, "rules"); strings.Contains(rules, ".kule") {
		t.Errorf("a .kule change was remembered:\n%s", rules)
	}
	// The folder's policy now holds a permit: the folder's policy is refused
	// and nothing more is committed until it goes.
	writeFile(t, filepath.Join(cp, "src/main.go"), "package main // again\n")
	if _, err := kule(t, "commit", id); err == nil || !strings.Contains(err.Error(), filepath.Join(folder, ".kule/policy.cedar")+":1:") {
		t.Errorf("commit under a folder policy with a permit: %v", err)
	}
}
