package sandbox

import (
	"errors"
	"fmt"
	"strings"
)

// Errors of the command itself, not of the sandbox: the sandbox was set up,
// and what it was asked to run does not exist or is no program.
var (
	// ErrCommandNotFound: no such program (exit code 127, as a shell says).
	ErrCommandNotFound = errors.New("command not found")
	// ErrCommandCannotRun: the file is not a program the system can start
	// (exit code 126).
	ErrCommandCannotRun = errors.New("command cannot run")
)

// commandErrors is on everywhere but in the test that shows what a missing
// command was taken for without it.
var commandErrors = true

// commandFailure reads the helper's status for the command's own failure to
// start (pid1_linux.c's look_path and exec_command write these words): its
// exit code and error, or a nil error when it is not one.
func commandFailure(status string) (int, error) {
	if !commandErrors {
		return 0, nil
	}
	for _, c := range []struct {
		err  error
		code int
	}{{ErrCommandNotFound, 127}, {ErrCommandCannotRun, 126}} {
		if rest, ok := strings.CutPrefix(status, c.err.Error()+": "); ok {
			return c.code, fmt.Errorf("%w: %s; nothing ran and nothing changed (check the command's name and the PATH it runs with)", c.err, rest)
		}
	}
	return 0, nil
}
