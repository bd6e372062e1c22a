package kernel_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/internal/policy"
	"github.com/kulehq/kule/kernel/internal/runner"
)

// The policy loads while the command's sandbox sets up; a policy that cannot
// be read still stops the command before it starts, and exec says why.
func TestExecWithABrokenPolicyRunsNothing(t *testing.T) {
	f := newFixture(t, map[string]string{"a.txt": "a\n"})
	tk := f.newTask()
	if err := os.WriteFile(policy.PersonPath(f.k.Store().Root), []byte("permit (principal, action, resource"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := f.k.Exec(context.Background(), tk, kernel.ExecOptions{Args: []string{"touch", "ran"}, Spec: runner.Spec{Stdout: os.Stderr, Stderr: os.Stderr}})
	if err == nil || !strings.Contains(err.Error(), "policy.cedar") || !strings.Contains(err.Error(), "nothing ran") {
		t.Fatalf("err = %v, want the policy's error and that nothing ran", err)
	}
	if _, err := os.Lstat(filepath.Join(tk.Paths.Copy, "ran")); err == nil {
		t.Fatal("the command ran with a policy that could not be read")
	}
	// Mended, the same command runs.
	if err := os.Remove(policy.PersonPath(f.k.Store().Root)); err != nil {
		t.Fatal(err)
	}
	f.sh(tk, "touch ran")
	if _, err := os.Lstat(filepath.Join(tk.Paths.Copy, "ran")); err != nil {
		t.Fatal(err)
	}
}

// StartProxy (agent runs) still fails at once on a policy it cannot read.
func TestStartProxyWithABrokenPolicy(t *testing.T) {
	f := newFixture(t, nil)
	tk := f.newTask()
	if err := os.WriteFile(policy.PersonPath(f.k.Store().Root), []byte("forbid ("), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := f.k.StartProxy(context.Background(), tk, kernel.ProxyOptions{})
	if err == nil {
		p.Close()
		t.Fatal("StartProxy started with a policy it could not read")
	}
}

// A command writes the task's tmp; kule writes the CA bundle there before
// each command. A link planted at the bundle's name by one command never
// makes the next exec write through it to a file of the person's.
func TestExecNeverWritesTheBundleThroughALink(t *testing.T) {
	f := newFixture(t, map[string]string{"a.txt": "a\n"})
	tk := f.newTask()
	precious := filepath.Join(t.TempDir(), ".bashrc")
	if err := os.WriteFile(precious, []byte("the person's file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(tk.Paths.Tmp, "kule-ca-bundle.pem")
	f.sh(tk, "rm -f '"+bundle+"' && ln -s '"+precious+"' '"+bundle+"'")
	f.sh(tk, "true")
	if b, _ := os.ReadFile(precious); string(b) != "the person's file\n" {
		t.Fatalf("the person's file now starts %q", b[:min(len(b), 40)])
	}
	if st, err := os.Lstat(bundle); err != nil || !st.Mode().IsRegular() {
		t.Fatalf("bundle: %v; want a regular file in place of the link", err)
	}
}

// The CA bundle is written while the command's sandbox sets up; when it
// cannot be written, the command never starts.
func TestExecWhoseBundleCannotBeWrittenRunsNothing(t *testing.T) {
	f := newFixture(t, map[string]string{"a.txt": "a\n"})
	tk := f.newTask()
	// A folder of the command's own making where the bundle goes: kule
	// neither writes into it nor removes it.
	bundle := filepath.Join(tk.Paths.Tmp, "kule-ca-bundle.pem")
	f.sh(tk, "rm -f '"+bundle+"' && mkdir -p '"+bundle+"' && touch '"+bundle+"/kept'")
	_, _, err := f.k.Exec(context.Background(), tk, kernel.ExecOptions{Args: []string{"touch", "ran"}, Spec: runner.Spec{Stdout: os.Stderr, Stderr: os.Stderr}})
	if err == nil || !strings.Contains(err.Error(), "CA bundle") || !strings.Contains(err.Error(), "nothing ran") {
		t.Fatalf("err = %v, want the bundle's error and that nothing ran", err)
	}
	if _, err := os.Lstat(filepath.Join(tk.Paths.Copy, "ran")); err == nil {
		t.Fatal("the command ran without its CA bundle")
	}
	if _, err := os.Lstat(filepath.Join(bundle, "kept")); err != nil {
		t.Fatalf("the command's own file went: %v", err)
	}
}
