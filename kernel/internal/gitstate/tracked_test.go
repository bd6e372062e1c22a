package gitstate

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func isEnv(name string) bool { return strings.HasPrefix(filepath.Base(name), ".env") }

// gitListed is what git itself says the index and HEAD hold, filtered by
// match: the answer Tracked must give.
func gitListed(t *testing.T, dir string, match func(string) bool) []string {
	t.Helper()
	set := map[string]bool{}
	lines := run(t, dir, "ls-files", "-z")
	if out, err := tryRun(dir, "rev-parse", "-q", "--verify", "HEAD"); err == nil && out != "" {
		lines += "\x00" + run(t, dir, "ls-tree", "-r", "-z", "--name-only", "HEAD")
	}
	for _, n := range strings.Split(lines, "\x00") {
		if n != "" && match(n) {
			set[n] = true
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func TestTrackedMatchesGit(t *testing.T) {
	needGit(t)
	for name, setup := range map[string]func(t *testing.T, dir string){
		"no commit, staged": func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, ".env"), "A=1\n")
			run(t, dir, "add", ".env")
		},
		"in history and index, deep": func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "a/b/c/.env.local"), "A=1\n")
			write(t, filepath.Join(dir, "a/readme"), "hi\n")
			write(t, filepath.Join(dir, ".env"), "B=2\n")
			run(t, dir, "add", ".")
			run(t, dir, "commit", "-qm", "one")
		},
		"removed from the index, still in HEAD": func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "x/.env"), "A=1\n")
			run(t, dir, "add", ".")
			run(t, dir, "commit", "-qm", "one")
			run(t, dir, "rm", "-q", "--cached", "x/.env")
		},
		"staged after the last commit": func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "keep"), "k\n")
			run(t, dir, "add", ".")
			run(t, dir, "commit", "-qm", "one")
			write(t, filepath.Join(dir, "new/.env"), "A=1\n")
			run(t, dir, "add", ".")
		},
		"a link named .env": func(t *testing.T, dir string) {
			if err := os.Symlink("elsewhere", filepath.Join(dir, ".env")); err != nil {
				t.Fatal(err)
			}
			run(t, dir, "add", ".")
			run(t, dir, "commit", "-qm", "one")
		},
		"nothing of the kind": func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "env.txt"), "x\n")
			run(t, dir, "add", ".")
			run(t, dir, "commit", "-qm", "one")
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "repo")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			run(t, dir, "init", "-q", "-b", "main")
			setup(t, dir)
			got, err := Tracked(filepath.Join(dir, ".git"), isEnv)
			if err != nil {
				t.Fatalf("Tracked: %v", err)
			}
			if diff := cmp.Diff(gitListed(t, dir, isEnv), got); diff != "" {
				t.Errorf("Tracked against git ls-files + ls-tree (-git +Tracked):\n%s", diff)
			}
		})
	}
}

func TestTrackedRefuses(t *testing.T) {
	needGit(t)
	newRepo := func(t *testing.T) string {
		dir := filepath.Join(t.TempDir(), "repo")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		run(t, dir, "init", "-q", "-b", "main")
		return filepath.Join(dir, ".git")
	}
	t.Run("no HEAD", func(t *testing.T) {
		g := newRepo(t)
		if err := os.Remove(filepath.Join(g, "HEAD")); err != nil {
			t.Fatal(err)
		}
		if _, err := Tracked(g, isEnv); !errors.Is(err, errNoRepository) {
			t.Fatalf("Tracked without HEAD = %v, want errNoRepository", err)
		}
	})
	for name, cfg := range map[string]string{
		"sha256 objects":     "[core]\n\trepositoryformatversion = 1\n[extensions]\n\tobjectformat = sha256\n",
		"noop-v1 in v0":      "[core]\n\trepositoryformatversion = 0\n[extensions]\n\tnoop-v1 = true\n",
		"config not parsing": "[core\n",
	} {
		t.Run(name, func(t *testing.T) {
			g := newRepo(t)
			write(t, filepath.Join(g, "config"), cfg)
			if _, err := Tracked(g, isEnv); err == nil {
				t.Fatalf("Tracked with config %q = nil error, want a refusal", cfg)
			}
		})
	}
	t.Run("noop extensions are read", func(t *testing.T) {
		g := newRepo(t)
		write(t, filepath.Join(g, "config"), "[core]\n\trepositoryformatversion = 1\n[extensions]\n\tnoop = true\n\tnoop-v1 = true\n")
		if _, err := Tracked(g, isEnv); err != nil {
			t.Fatalf("Tracked with noop extensions: %v", err)
		}
	})
	t.Run("HEAD names a missing commit", func(t *testing.T) {
		g := newRepo(t)
		write(t, filepath.Join(g, "refs/heads/main"), idA+"\n")
		if _, err := Tracked(g, isEnv); err == nil {
			t.Fatal("Tracked with HEAD at a missing commit = nil error")
		}
	})
}

// A subtree that cannot be read ends the walk; what was found before it
// stands, as it did when go-git's tree walker read HEAD.
func TestTrackedStopsAtAMissingTree(t *testing.T) {
	needGit(t)
	dir := filepath.Join(t.TempDir(), "repo")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, dir, "init", "-q", "-b", "main")
	write(t, filepath.Join(dir, "a/.env"), "A=1\n")
	write(t, filepath.Join(dir, "b/.env"), "B=1\n")
	run(t, dir, "add", ".")
	run(t, dir, "commit", "-qm", "one")
	run(t, dir, "rm", "-rq", "--cached", ".")
	bTree := run(t, dir, "rev-parse", "HEAD:b")
	if err := os.Remove(filepath.Join(dir, ".git/objects", bTree[:2], bTree[2:])); err != nil {
		t.Fatal(err)
	}
	got, err := Tracked(filepath.Join(dir, ".git"), isEnv)
	if err != nil {
		t.Fatalf("Tracked: %v", err)
	}
	if diff := cmp.Diff([]string{"a/.env"}, got); diff != "" {
		t.Errorf("Tracked with b's tree missing (-want +got):\n%s", diff)
	}
}
