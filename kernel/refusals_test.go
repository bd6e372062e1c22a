package kernel_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/internal/config"
	"github.com/kulehq/kule/kernel/internal/runner"
	"github.com/kulehq/kule/kernel/internal/sandbox"
	"github.com/kulehq/kule/kernel/internal/sandboxlog"
)

// What the sandbox refuses for `kule exec` lands in the task's
// sandbox.jsonl, one record a refusal, and the command does not run.
// Not parallel: the person's home is $HOME, set for this test.
func TestSandboxRefusalsLandInTheTaskLog(t *testing.T) {
	person := t.TempDir()
	t.Setenv("HOME", person)
	write(t, person, map[string]string{".ssh/id_ed25519": "KEY"})
	f := newFixture(t, map[string]string{"a.txt": "a\n"})
	tk := f.newTask()
	other := f.newTask()

	exec := func(o kernel.SandboxOptions) error {
		t.Helper()
		var spec runner.Spec
		o.Warn = &strings.Builder{}
		r, err := kernel.SandboxRunner(f.k.Store().Root, tk, &spec, o)
		if err != nil {
			t.Fatal(err)
		}
		kk := f.k.With(kernel.RunHooks{Runner: r})
		spec.Stdout, spec.Stderr = &strings.Builder{}, &strings.Builder{}
		_, _, err = kk.Exec(context.Background(), tk, kernel.ExecOptions{Args: []string{"sh", "-c", "echo ran > ran.txt"}, Spec: spec})
		return err
	}
	ssh := filepath.Join(person, ".ssh")
	if err := exec(kernel.SandboxOptions{Reveal: []string{ssh}}); !errors.Is(err, sandbox.ErrBadSpec) {
		t.Fatalf("--reveal ~/.ssh: err = %v, want refused", err)
	}
	if err := exec(kernel.SandboxOptions{AllowWrite: []string{other.Paths.Copy}}); !errors.Is(err, sandbox.ErrBadSpec) {
		t.Fatalf("--allow-write another task: err = %v, want refused", err)
	}
	cfg, _ := config.Load(f.k.Store().Root)
	cfg.Sandbox.Devices = []string{"sda"}
	must(t, config.Save(f.k.Store().Root, cfg))
	if err := exec(kernel.SandboxOptions{}); !errors.Is(err, sandbox.ErrDevice) {
		t.Fatalf("device sda: err = %v, want refused", err)
	}
	if _, err := os.Stat(filepath.Join(tk.Paths.Copy, "ran.txt")); err == nil {
		t.Fatal("a refused command ran")
	}

	recs, damaged, err := kernel.SandboxLog(tk)
	if err != nil || len(damaged) > 0 {
		t.Fatal(err, damaged)
	}
	var got []string
	for _, r := range recs {
		if r.Run != "sh -c echo ran > ran.txt" || r.Why == "" || r.Do == "" || r.Time.IsZero() || r.From != "sandbox" {
			t.Errorf("record lacks its run, why, what to do or time: %+v", r)
		}
		got = append(got, r.Kind+" "+r.What)
	}
	want := []string{
		sandboxlog.Opening + " --reveal " + ssh,
		sandboxlog.Opening + " --allow-write " + other.Paths.Copy,
		sandboxlog.Device + " /dev/sda",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("sandbox.jsonl:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(recs[0].Why, ssh) {
		t.Errorf("the refusal does not name the hidden path: %q", recs[0].Why)
	}
	if o, _, _ := kernel.SandboxLog(other); len(o) != 0 {
		t.Fatalf("another task's log got records: %+v", o)
	}
}
