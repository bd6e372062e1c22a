package gitstate

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestConfigDiffNamesTheKeys(t *testing.T) {
	t.Parallel()
	old := "[core]\n\trepositoryformatversion = 0\n\tbare = false\n[remote \"origin\"]\n\turl = https://example.com/a.git\n"
	for name, tc := range map[string]struct {
		new  string
		want []string
	}{
		"fsmonitor added":             {old + "[core]\n\tfsmonitor = \"touch /tmp/x\"\n", []string{`core.fsmonitor = "touch /tmp/x"`}},
		"hooksPath, old section form": {strings.Replace(old, "[core]", "[core]\n\thooksPath = /tmp/h ; a comment", 1), []string{`core.hookspath = "/tmp/h"`}},
		"remote redirected":           {strings.Replace(old, "example.com", "evil.example", 1), []string{`remote.origin.url = "https://evil.example/a.git"`}},
		"key removed":                 {strings.Replace(old, "\tbare = false\n", "", 1), []string{"core.bare removed"}},
		"bare key and continuation":   {old + "[alias]\n\tx = !sh -c \\\n 'id'\n[core]\n\tsymlinks\n", []string{`alias.x = "!sh -c  'id'"`, `core.symlinks = "true"`}},
		"only layout":                 {strings.ReplaceAll(old, "\t", "    "), nil},
	} {
		t.Run(name, func(t *testing.T) {
			got := ConfigDiff([]byte(old), []byte(tc.new))
			if !slices.Equal(got, tc.want) {
				t.Errorf("ConfigDiff = %q, want %q", got, tc.want)
			}
		})
	}
}

// ConfigKeys reads what git itself reads: for each key git config --list
// prints, the same value.
func TestConfigKeysAgreeWithGit(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("git is not installed")
		}
		t.Skip("git is not installed")
	}
	src := "[core]\n\tfsmonitor = \"a;b\" # comment\n\tEditor = vim\n[Remote \"Up Stream\"]\n\turl = x\n[branch.main]\n\tremote = origin\n"
	p := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "config", "--file", p, "--list").Output()
	if err != nil {
		t.Fatal(err)
	}
	keys := ConfigKeys([]byte(src))
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		if got := keys[k]; len(got) != 1 || got[0] != v {
			t.Errorf("%s: ConfigKeys has %q, git %q", k, got, v)
		}
	}
}

func FuzzConfigKeys(f *testing.F) {
	for _, s := range []string{"[core]\n\tfsmonitor = x\n", "[a \"b\\\"c\"]\nk\n", "[x\nk=v\\\n", "k = \"unterminated\n", "[s]k=v;c\n"} {
		f.Add([]byte(s), []byte("[core]\nbare = false\n"))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		d := ConfigDiff(a, b)
		if len(ConfigDiff(a, a)) != 0 {
			t.Fatalf("a config differs from itself: %q", ConfigDiff(a, a))
		}
		for _, l := range d {
			for _, r := range l {
				if r < 0x20 || r == 0x7f {
					t.Fatalf("a line of the diff holds a control character: %q", l)
				}
			}
		}
	})
}
