package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func walkCommands(c *cobra.Command, fn func(*cobra.Command)) {
	if c.Hidden {
		return
	}
	fn(c)
	for _, s := range c.Commands() {
		walkCommands(s, fn)
	}
}

// TestEveryCommandHasExamples: every command's --help shows examples, and
// every entry of commandExamples names a command that exists.
func TestEveryCommandHasExamples(t *testing.T) {
	root := rootCommand()
	seen := map[string]bool{}
	walkCommands(root, func(c *cobra.Command) {
		seen[c.CommandPath()] = true
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%s has no examples: give it an Example, or an entry in commandExamples", c.CommandPath())
		}
	})
	for p := range commandExamples {
		if !seen[p] {
			t.Errorf("commandExamples has %q, which is no command", p)
		}
	}
}

// TestArgErrorsInWords: a wrong number of arguments is said in words with
// what the command takes, for every command, never cobra's "arg(s)".
func TestArgErrorsInWords(t *testing.T) {
	root := rootCommand()
	many := strings.Fields("a b c d e f g h i j k l")
	walkCommands(root, func(c *cobra.Command) {
		if c.Args == nil {
			return
		}
		for _, args := range [][]string{nil, many} {
			err := c.Args(c, args)
			if err == nil {
				continue
			}
			msg := err.Error()
			if c.HasAvailableSubCommands() && strings.HasPrefix(msg, "unknown command \"a\" for") {
				continue // names the subcommand it does not know
			}
			if strings.Contains(msg, "arg(s)") || !strings.Contains(msg, " takes ") || !strings.Contains(msg, "--help") {
				t.Errorf("%s with %d arguments: %q", c.CommandPath(), len(args), msg)
			}
		}
	})
	c := cli{t: t, home: t.TempDir()}
	out, err := c.kule("", "commit")
	if err == nil || !strings.Contains(out, "kule: commit takes TASK (TASK: a task id") || !strings.Contains(out, "got nothing; see kule commit --help") {
		t.Errorf("kule commit with no task: %v\n%s", err, out)
	}
	out, err = c.kule("", "name", "1a2b")
	if err == nil || !strings.Contains(out, "name takes TASK NAME") || !strings.Contains(out, "got 1 argument: 1a2b") {
		t.Errorf("kule name with one argument: %v\n%s", err, out)
	}
}

// TestPrefixesNotRepeated: an error whose parts repeat a prefix is said
// with it once, at the CLI and in kule status's policy line; a value that
// repeats (a path) is kept as it is.
func TestPrefixesNotRepeated(t *testing.T) {
	for in, want := range map[string]string{
		"policy: policy: x.cedar:2: bad":     "policy: x.cedar:2: bad",
		"commit: policy: policy: a: a":       "commit: policy: a",
		"exec: /tmp/a: /tmp/a: no such file": "exec: /tmp/a: /tmp/a: no such file",
		"plain":                              "plain",
	} {
		if got := dedupePrefixes(in); got != want {
			t.Errorf("dedupePrefixes(%q) = %q, want %q", in, got, want)
		}
	}
	dir := t.TempDir()
	folder := filepath.Join(dir, "folder")
	writeFile(t, filepath.Join(folder, "a.txt"), "a\n")
	c := cli{t: t, home: filepath.Join(dir, "home")}
	c.must("new", folder)
	id := strings.Fields(c.must("list"))[0]
	c.must("exec", id, "--no-network", "--", "sh", "-c", "echo b > b.txt")
	writeFile(t, filepath.Join(c.home, "policy.cedar"), "permit(garbage\n")
	for _, args := range [][]string{{"status", id}, {"commit", id}} {
		out, _ := c.kule("", args...)
		if !strings.Contains(out, "policy.cedar:2") || strings.Contains(out, "policy: policy:") {
			t.Errorf("kule %s under a broken policy:\n%s", args[0], out)
		}
	}
}

// TestNameColorHomeSayWhatTheyDid: kule name, color and home print what
// they did, also when it is nothing.
func TestNameColorHomeSayWhatTheyDid(t *testing.T) {
	dir := t.TempDir()
	folder := filepath.Join(dir, "folder")
	writeFile(t, filepath.Join(folder, "a.txt"), "a\n")
	c := cli{t: t, home: filepath.Join(dir, "home")}
	c.must("new", folder)
	id := strings.Fields(c.must("list"))[0]
	for args, want := range map[string]string{
		"name " + id + " tidy notes": "task " + id + ` is named "tidy notes"`,
		"color " + id + " teal":      "task " + id + " is teal now",
		"color " + id + " none":      "task " + id + " has no colour now",
		"home " + id:                 "task " + id + " wrote nothing in your home",
	} {
		if out := c.must(strings.Fields(args)...); !strings.Contains(out, want) {
			t.Errorf("kule %s: %q, want %q", args, out, want)
		}
	}
	c.must("name", id, "notes")
	if out := c.must("list"); !strings.Contains(out, id+"  notes  "+folder) {
		t.Errorf("kule list does not show the name:\n%s", out)
	}
	if out := c.must("name", id, ""); !strings.Contains(out, "has no name now") {
		t.Errorf("kule name '': %q", out)
	}
}

// TestCompleteTaskIDs: the shell completes a task id with its name and
// folder as the description, an agent's name for --agent, and a plugin's
// name.
func TestCompleteTaskIDs(t *testing.T) {
	dir := t.TempDir()
	folder := filepath.Join(dir, "folder")
	writeFile(t, filepath.Join(folder, "a.txt"), "a\n")
	c := cli{t: t, home: filepath.Join(dir, "home")}
	c.must("new", folder)
	id := strings.Fields(c.must("list"))[0]
	c.must("name", id, "notes")
	for args, want := range map[string]string{
		"__complete status ":                 id + "\tnotes · " + folder + "\n",
		"__complete commit " + id[:2]:        id + "\tnotes · " + folder + "\n",
		"__complete run " + id + " --agent ": "claude-code\t",
		"__complete agents show ":            "codex\t",
		"__complete plugins show ":           "markdown\tbuilt-in differ\n",
	} {
		a := strings.Split(args, " ")
		out, err := c.stdout(a...)
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("kule %s: %v\n%s\nwant %q", args, err, out, want)
		}
	}
	if out, _ := c.stdout("__complete", "run", id, "--agent="); !strings.Contains(out, "--agent=gemini\t") && !strings.Contains(out, "gemini\t") {
		t.Errorf("--agent= completes no agent:\n%s", out)
	}
}

// TestGoldenHelp: the --help of the main commands stays as
// testdata/golden/help.txt has it (go test -run TestGoldenHelp -update
// rewrites it).
func TestGoldenHelp(t *testing.T) {
	var all bytes.Buffer
	for _, path := range []string{"new", "exec", "status", "commit", "undo", "list", "limits", "doctor", "version"} {
		root := rootCommand()
		var b bytes.Buffer
		root.SetOut(&b)
		root.SetErr(&b)
		root.SetArgs(append(strings.Fields(path), "--help"))
		if err := root.Execute(); err != nil {
			t.Fatalf("kule %s --help: %v", path, err)
		}
		all.WriteString("$ kule " + path + " --help\n")
		all.Write(b.Bytes())
		all.WriteString("\n")
	}
	checkGolden(t, "help.txt", all.String())
}

// TestErrorPathsSayEachPrefixOnce runs the CLI's error paths with the
// CLI's last-line clean-up of repeated prefixes turned off, so what is
// checked is the message as the code builds it — the daemon and the app
// show those without that clean-up. No line may say a prefix twice
// ("policy: policy:"). The sub-test "without the fix" feeds the check the
// message the kernel's former double wrapping of a policy error made
// (kernel/judge.go's policyErr now wraps once) and sees it caught.
func TestErrorPathsSayEachPrefixOnce(t *testing.T) {
	dir := t.TempDir()
	folder := filepath.Join(dir, "folder")
	writeFile(t, filepath.Join(folder, "a.txt"), "a\n")
	c := cli{t: t, home: filepath.Join(dir, "home")}
	c.must("new", folder)
	id := strings.Fields(c.must("list"))[0]
	c.must("exec", id, "--no-network", "--", "sh", "-c", "echo b > b.txt")
	raw := func(env []string, args ...string) string {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(append(os.Environ(), "KULE_AS_CLI=1", "KULE_HOME="+c.home, "KULE_TEST_KEEP_REPEATS=1"), env...)
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Errorf("kule %s succeeded; the test wants its error path:\n%s", strings.Join(args, " "), out)
		}
		return string(out)
	}
	paths := []struct {
		env  []string
		args []string
	}{
		{nil, []string{"status", "ffffffff"}},
		{nil, []string{"commit", "ffffffff"}},
		{nil, []string{"new", filepath.Join(dir, "no-such-folder")}},
		{[]string{"KULE_BACKEND=bogus"}, []string{"new", folder}},
		{nil, []string{"limits", id, "--memory", "lots"}},
		{nil, []string{"budget", id, "lots"}},
		{nil, []string{"color", id, "mauve"}},
		{nil, []string{"exec", id}},
		{nil, []string{"undo", id}},
		{nil, []string{"home", id, "diff"}},
		{nil, []string{"group", "move", id, "no-such-group"}},
		{nil, []string{"plugins", "approve", filepath.Join(dir, "no-such-plugin")}},
		{nil, []string{"ext", "install", filepath.Join(dir, "no-such.kulext")}},
		{nil, []string{"preview", id, "no-such-file.txt"}},
		{nil, []string{"reveal", "add", filepath.Join(dir, "no-such-project")}},
		{nil, []string{"delete", "ffffffff"}},
		{nil, []string{"policy", "bogus"}},
		{nil, []string{"run", id, "--agent", "no-such-agent", "hello"}},
		{nil, []string{"transport", "test", "no-such-transport"}},
	}
	check := func(out string, args []string) {
		t.Helper()
		for _, line := range strings.Split(out, "\n") {
			if d := dedupePrefixes(line); d != line || strings.Contains(line, "kule: kule:") {
				t.Errorf("kule %s says a prefix twice:\n%s", strings.Join(args, " "), line)
			}
		}
	}
	for _, p := range paths {
		out := raw(p.env, p.args...)
		check(out, p.args)
	}
	// a config.toml that does not parse
	writeFile(t, filepath.Join(c.home, "config.toml"), "[policy\n")
	check(raw(nil, "commit", id), []string{"commit (broken config.toml)"})
	if err := os.Remove(filepath.Join(c.home, "config.toml")); err != nil {
		t.Fatal(err)
	}
	// a broken policy, judged by status and by commit
	writeFile(t, filepath.Join(c.home, "policy.cedar"), "permit(garbage\n")
	for _, args := range [][]string{{"commit", id}, {"status", id}} {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), "KULE_AS_CLI=1", "KULE_HOME="+c.home, "KULE_TEST_KEEP_REPEATS=1")
		out, _ := cmd.CombinedOutput()
		if !strings.Contains(string(out), "policy.cedar:2") {
			t.Errorf("kule %s under a broken policy does not name it:\n%s", args[0], out)
		}
		check(string(out), args)
	}
	t.Run("without the fix", func(t *testing.T) {
		line := "kule: commit: " + fmt.Errorf("policy: %w", errors.New("policy: policy.cedar:2: does not parse")).Error()
		if dedupePrefixes(line) == line {
			t.Fatalf("the check lets %q through", line)
		}
	})
}
