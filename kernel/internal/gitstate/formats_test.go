package gitstate

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Repository formats this package cannot read are refused, never misread.
func TestUnsupportedFormatsRefused(t *testing.T) {
	t.Parallel()
	needGit(t)
	for name, tc := range map[string]struct {
		config  string
		reftab  bool
		refused bool
	}{
		"sha256 objects":    {config: "[extensions]\n\tobjectformat = sha256\n", refused: true},
		"reftable refs":     {config: "[extensions]\n\trefstorage = reftable\n", refused: true},
		"a reftable folder": {reftab: true, refused: true},
		"sha1 said aloud":   {config: "[extensions]\n\tobjectFormat = \"sha1\" # the default\n"},
		"files refs":        {config: "[extensions]\n\trefStorage = files\n"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "repo")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			run(t, dir, "init", "-q", "-b", "main")
			g := filepath.Join(dir, ".git")
			if tc.config != "" {
				b, err := os.ReadFile(filepath.Join(g, "config"))
				if err != nil {
					t.Fatal(err)
				}
				write(t, filepath.Join(g, "config"), string(b)+tc.config)
			}
			if tc.reftab {
				if err := os.Mkdir(filepath.Join(g, "reftable"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Take(g)
			if tc.refused && !errors.Is(err, ErrUnsupported) {
				t.Fatalf("Take = %v, want ErrUnsupported", err)
			}
			if !tc.refused && err != nil {
				t.Fatalf("Take = %v, want it read", err)
			}
		})
	}
}

// A task that repacks its copy brings a new pack; it reaches the folder
// whole and git finds every object the moved branch needs.
func TestRepackedCopyApplies(t *testing.T) {
	t.Parallel()
	w := newWorld(t, nil)
	write(t, filepath.Join(w.copy, "c.txt"), "sea\n")
	run(t, w.copy, "add", "c.txt")
	run(t, w.copy, "commit", "-q", "-m", "task")
	run(t, w.copy, "repack", "-q", "-a", "-d")
	eff := w.compare()
	if len(eff.Objects.Packs) == 0 {
		t.Fatalf("a repack made no new pack: %+v", eff.Objects)
	}
	undo, err := Apply(w.base, w.folderGit(), w.copyGit(), eff, ApplyOptions{})
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	w.syncFiles("c.txt")
	w.fsck()
	if got := run(t, w.folder, "log", "-1", "--format=%s"); got != "task" {
		t.Errorf("folder log = %q, want the task's commit", got)
	}
	if err := Revert(w.folderGit(), undo); err != nil {
		t.Fatalf("Revert: %v", err)
	}
	if got := run(t, w.folder, "log", "-1", "--format=%s", "main"); got != "second" {
		t.Errorf("after Revert main is at %q", got)
	}
}

// A hook the task writes reaches the folder only when a person approved
// hooks, executable as the task made it; undo takes it away again.
func TestHookAppliesOnlyWhenApproved(t *testing.T) {
	t.Parallel()
	w := newWorld(t, nil)
	hook := filepath.Join(w.copyGit(), "hooks", "pre-commit")
	write(t, hook, "#!/bin/sh\nexit 0\n")
	if err := os.Chmod(hook, 0o755); err != nil {
		t.Fatal(err)
	}
	eff := w.compare()
	if len(eff.Hooks) != 1 || eff.Hooks[0].Name != "pre-commit" {
		t.Fatalf("hooks = %+v", eff.Hooks)
	}
	folderHook := filepath.Join(w.folderGit(), "hooks", "pre-commit")
	if _, err := Apply(w.base, w.folderGit(), w.copyGit(), eff, ApplyOptions{}); err != nil {
		t.Fatalf("Apply without approval: %v", err)
	}
	if _, err := os.Lstat(folderHook); err == nil {
		t.Fatal("a hook reached the folder without approval")
	}
	undo, err := Apply(w.base, w.folderGit(), w.copyGit(), eff, ApplyOptions{Hooks: true})
	if err != nil {
		t.Fatalf("Apply with hooks approved: %v", err)
	}
	st, err := os.Lstat(folderHook)
	if err != nil || st.Mode().Perm()&0o100 == 0 {
		t.Fatalf("the approved hook: %v, %v (want an executable file)", st, err)
	}
	if err := Revert(w.folderGit(), undo); err != nil {
		t.Fatalf("Revert: %v", err)
	}
	if _, err := os.Lstat(folderHook); err == nil {
		t.Error("the hook survived the undo")
	}
	// The hook changed since it was reviewed: refused, nothing written.
	write(t, hook, "#!/bin/sh\nrm -rf ~\n")
	if _, err := Apply(w.base, w.folderGit(), w.copyGit(), eff, ApplyOptions{Hooks: true}); !errors.Is(err, ErrMoved) {
		t.Fatalf("Apply of a hook changed after review = %v, want ErrMoved", err)
	}
	if _, err := os.Lstat(folderHook); err == nil {
		t.Error("a hook changed after review reached the folder")
	}
}

// Effects travel as JSON (the engine stores them with the task); a staged
// path that is not UTF-8 comes back byte for byte and is applied as git
// staged it.
func TestNonUTF8IndexPathThroughJSON(t *testing.T) {
	t.Parallel()
	w := newWorld(t, nil)
	name := "caf\xe9.txt"
	write(t, filepath.Join(w.copy, name), "latin-1\n")
	run(t, w.copy, "add", "--", name)
	eff := w.compare()
	b, err := json.Marshal(eff)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "path_b64") {
		t.Fatalf("a non-UTF-8 path went out as a plain string: %s", b)
	}
	var back Effects
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(back.Index, func(c IndexChange) bool { return c.Path == name }) {
		t.Fatalf("after JSON the index changes are %+v, want %q", back.Index, name)
	}
	if _, err := Apply(w.base, w.folderGit(), w.copyGit(), &back, ApplyOptions{}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	w.syncFiles(name)
	w.fsck()
	if got := run(t, w.folder, "-c", "core.quotepath=false", "ls-files", "-z"); !strings.Contains(got, name) {
		t.Errorf("git ls-files in the folder = %q, want %q staged", got, name)
	}
	var bad IndexChange
	if err := json.Unmarshal([]byte(`{"kind":"add","path":"x","path_b64":"%%"}`), &bad); err == nil {
		t.Error("a path_b64 that is not base64 was accepted")
	}
}
