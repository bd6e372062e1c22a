package gitstate

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFind(t *testing.T) {
	t.Parallel()
	w := newWorld(t, func(folder string) {
		// A repository nested inside the folder.
		inner := filepath.Join(folder, "vendor", "inner")
		os.MkdirAll(inner, 0o755)
		run(t, inner, "init", "-q", "-b", "main")
		// A linked worktree inside the folder (its .git is a file).
		run(t, folder, "worktree", "add", "-q", "wt", "feature")
		// A .git file naming a directory outside the folder.
		os.MkdirAll(filepath.Join(folder, "elsewhere"), 0o755)
		write(t, filepath.Join(folder, "elsewhere", ".git"), "gitdir: /nonexistent/.git\n")
	})
	got, err := Find(w.folder)
	if err != nil {
		t.Fatal(err)
	}
	want := []Repo{
		{Path: ".", GitDir: filepath.Join(w.folder, ".git")},
		{Path: "vendor/inner", GitDir: filepath.Join(w.folder, "vendor", "inner", ".git"), Nested: true},
		{Path: "wt", GitDir: filepath.Join(w.folder, ".git", "worktrees", "wt"), Nested: true, Linked: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Find (-want +got):\n%s", diff)
	}
	// The linked worktree's snapshot takes HEAD and index from its own git
	// directory, refs from the common one.
	s, err := Take(want[2].GitDir)
	if err != nil {
		t.Fatal(err)
	}
	if s.Refs["HEAD"] != "ref: refs/heads/feature" || s.Refs["refs/heads/main"] == "" || len(s.Index) != 2 {
		t.Errorf("worktree snapshot: HEAD %q, main %q, %d index entries", s.Refs["HEAD"], s.Refs["refs/heads/main"], len(s.Index))
	}
}

func TestFindOutsideGitDir(t *testing.T) {
	t.Parallel()
	needGit(t)
	root := t.TempDir()
	main := filepath.Join(root, "main")
	os.MkdirAll(main, 0o755)
	run(t, main, "init", "-q", "-b", "main")
	commitIn(main, "a", "a\n", "a")(&world{t: t})
	run(t, main, "worktree", "add", "-q", "-b", "side", filepath.Join(root, "folder"))
	got, err := Find(filepath.Join(root, "folder"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !got[0].Outside || !got[0].Linked || got[0].Nested {
		t.Fatalf("Find = %+v, want one linked repository outside the folder", got)
	}
}

func TestCommandEnvWithRealGit(t *testing.T) {
	t.Parallel()
	needGit(t)
	dir := t.TempDir()
	run(t, dir, "init", "-q")
	cases := map[string]struct {
		env  []string
		want map[string]string
	}{
		"no git config in the environment": {
			want: map[string]string{"core.checkstat": "minimal", "core.trustctime": "false"},
		},
		"existing pairs keep their numbers": {
			env:  []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=user.name", "GIT_CONFIG_VALUE_0=Grace"},
			want: map[string]string{"core.checkstat": "minimal", "core.trustctime": "false", "user.name": "Grace"},
		},
		"a broken count is replaced": {
			env:  []string{"GIT_CONFIG_COUNT=many", "GIT_CONFIG_KEY_0=user.name", "GIT_CONFIG_VALUE_0=Grace"},
			want: map[string]string{"core.checkstat": "minimal", "core.trustctime": "false"},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			env := CommandEnv(append(gitEnv(dir), c.env...))
			cmd := exec.Command("git", "config", "--list", "--show-scope")
			cmd.Dir, cmd.Env = dir, env
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("git config --list: %v\n%s", err, out)
			}
			got := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				scope, kv, _ := strings.Cut(line, "\t")
				if scope != "command" {
					continue
				}
				k, v, _ := strings.Cut(kv, "=")
				got[k] = v
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("command-scope config (-want +got):\n%s", diff)
			}
		})
	}
	// The repository's config file is never edited.
	b, _ := os.ReadFile(filepath.Join(dir, ".git", "config"))
	if strings.Contains(string(b), "checkStat") {
		t.Error("CommandEnv edited the config file")
	}
}
