package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kulehq/kule/cmd/internal/daemon/client"
	"github.com/kulehq/kule/kernel"
)

// revealingSSH is a RunnerFor that runs the app's commands in the real
// sandbox, asked to reveal the person's ~/.ssh (which it refuses). It sets
// $HOME: tests that use it are not parallel.
func revealingSSH(t *testing.T, k *kernel.Kernel) (func(*kernel.Task, *kernel.RunSpec) (kernel.Runner, error), string) {
	t.Helper()
	person := t.TempDir()
	t.Setenv("HOME", person)
	ssh := filepath.Join(person, ".ssh")
	must(t, os.MkdirAll(ssh, 0o700))
	must(t, os.WriteFile(filepath.Join(ssh, "id_ed25519"), []byte("KEY"), 0o600))
	return func(tk *kernel.Task, spec *kernel.RunSpec) (kernel.Runner, error) {
		return kernel.SandboxRunner(k.Home(), tk, spec, kernel.SandboxOptions{Reveal: []string{ssh}, Warn: &strings.Builder{}})
	}, ssh
}

// A refusal of the sandbox in a run of the app lands in sandbox.jsonl, goes
// out as a "sandbox" event, and GET /api/tasks/{id}/sandbox lists it with
// the note on what cannot be listed.
func TestSandboxRefusalReachesTheAPIAndTheStream(t *testing.T) {
	k := newKernel(t)
	runnerFor, ssh := revealingSSH(t, k)
	d := startDaemon(t, Config{Kernel: k, RunnerFor: runnerFor})
	rep, err := k.NewTask(context.Background(), sampleFolder(t))
	must(t, err)
	ch, stop := d.Bus.Subscribe()
	defer stop()
	step, err := d.Exec(context.Background(), rep.Task, []string{"sh", "-c", "echo hi > ran.txt"}, "echo hi > ran.txt")
	if err == nil || step == nil || step.Error == "" {
		t.Fatalf("a run with --reveal ~/.ssh: step %+v, err %v; want refused", step, err)
	}
	if _, err := os.Stat(filepath.Join(rep.Task.Paths.Copy, "ran.txt")); err == nil {
		t.Fatal("the refused command ran")
	}
	var ev *Event
	for ev == nil {
		select {
		case e := <-ch:
			if e.Type == "sandbox" {
				ev = &e
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no sandbox event")
		}
	}
	if r, ok := ev.Data.(kernel.SandboxRecord); !ok || ev.Task != rep.Task.ID || r.What != "--reveal "+ssh || r.Run != "sh -c echo hi > ran.txt" {
		t.Fatalf("event %+v", ev)
	}
	var v SandboxView
	must(t, client.New(d.home).Do(context.Background(), "GET", "/api/tasks/"+rep.Task.ID+"/sandbox", nil, &v))
	if len(v.Records) != 1 || v.Records[0].Kind != kernel.SandboxOpening || !strings.Contains(v.Records[0].Why, ssh) || !strings.Contains(v.Accesses, "cannot be listed on this machine") {
		t.Fatalf("GET sandbox: %+v", v)
	}
}
