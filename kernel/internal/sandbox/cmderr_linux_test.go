package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kulehq/kule/kernel/internal/runner"
)

// A command that does not exist, or a file that is no program, is the
// command's error (exit 127 or 126), never a sandbox that could not be set
// up: no refusal is told, so nobody is advised to weaken the sandbox.
// Without the check the same run is taken for a setup failure and advises
// `kule isolation --accept-weaker on`. Not parallel: it turns the check off.
func TestMissingCommandIsTheCommandsError(t *testing.T) {
	skipUnlessSandbox(t)
	w := newWorld(t)
	notProgram := filepath.Join(w.task.Copy, "notes.txt")
	if err := os.WriteFile(notProgram, []byte("\x00\x01\x02 not a program\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(notProgram)
	run := func(args ...string) (int, []Refusal, error) {
		t.Helper()
		var told []Refusal
		s := w.sandbox()
		s.Refused = func(r Refusal) { told = append(told, r) }
		var out strings.Builder
		code, err := s.Run(context.Background(), runner.Spec{Task: w.task, Env: []string{"PATH=/usr/bin:/bin"}, Args: args, Stdout: &out, Stderr: &out})
		return code, told, err
	}

	commandErrors = false
	_, told, err := run("/nonexistent/cmd")
	commandErrors = true
	if !errors.Is(err, ErrSetup) || len(told) != 1 || !strings.Contains(told[0].Do, "--accept-weaker on") {
		t.Fatalf("without the check: err %v, told %+v; want it taken for a setup failure (else this test shows nothing)", err, told)
	}

	for _, c := range []struct {
		args []string
		code int
		want error
		says string
	}{
		{[]string{"/nonexistent/cmd"}, 127, ErrCommandNotFound, "command not found: /nonexistent/cmd"},
		{[]string{"nosuchcmd", "--flag"}, 127, ErrCommandNotFound, "command not found: nosuchcmd"},
		{[]string{"./notes.txt"}, 126, ErrCommandCannotRun, "command cannot run: ./notes.txt"},
	} {
		code, told, err := run(c.args...)
		if code != c.code || !errors.Is(err, c.want) || errors.Is(err, ErrSetup) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%q: code %d, err %v; want %d and %q", c.args, code, err, c.code, c.says)
		}
		if len(told) != 0 {
			t.Errorf("%q: told %+v; want no refusal", c.args, told)
		}
	}
	// The sandbox still runs what exists.
	if code, _, err := run("true"); code != 0 || err != nil {
		t.Fatalf("true: %d, %v", code, err)
	}
}
