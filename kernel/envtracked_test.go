package kernel_test

import (
	"context"
	"slices"
	"testing"
)

// A settings file git holds, in the index or only in HEAD, is named in the
// new task; one git ignores, or a folder that is no repository, is not.
func TestNewSaysWhichEnvFilesGitTracks(t *testing.T) {
	t.Parallel()
	files := map[string]string{".env": "K=sk-live-0123456789abcdef01234567\n", "api/.env.production": "X=1\n", "a/.env.local": "Y=2\n", ".env.example": "K=\n", "main.go": "package main\n"}
	for name, c := range map[string]struct {
		git  func(t *testing.T, dir string)
		want []string
	}{
		"no repository": {nil, nil},
		"committed": {func(t *testing.T, dir string) {
			gitIn(t, dir, "init", "-q")
			gitIn(t, dir, "add", ".env", ".env.example", "main.go")
			gitIn(t, dir, "commit", "-qm", "one")
		}, []string{".env"}},
		"only staged": {func(t *testing.T, dir string) {
			gitIn(t, dir, "init", "-q")
			gitIn(t, dir, "add", "api/.env.production")
		}, []string{"api/.env.production"}},
		"only in HEAD": {func(t *testing.T, dir string) {
			gitIn(t, dir, "init", "-q")
			gitIn(t, dir, "add", "-A")
			gitIn(t, dir, "commit", "-qm", "one")
			gitIn(t, dir, "rm", "-q", "--cached", ".env", "a/.env.local")
		}, []string{".env", "a/.env.local", "api/.env.production"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, files)
			if c.git != nil {
				c.git(t, f.folder)
			}
			rep, err := f.k.NewTask(context.Background(), f.folder)
			must(t, err)
			if !slices.Equal(rep.Task.EnvTracked, c.want) || len(rep.Notes) != len(c.want) {
				t.Fatalf("tracked %q, notes %q; want %q", rep.Task.EnvTracked, rep.Notes, c.want)
			}
			again, err := f.k.Resolve(rep.Task.ID)
			must(t, err)
			if !slices.Equal(again.EnvTracked, c.want) {
				t.Fatalf("task.json keeps %q, want %q", again.EnvTracked, c.want)
			}
		})
	}
}
