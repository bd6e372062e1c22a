package gitstate

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Repo is one repository found in a folder.
type Repo struct {
	// Path is the directory holding `.git`, relative to the folder root,
	// slash-separated; "." for the root itself.
	Path string `json:"path"`
	// GitDir is the absolute git directory (`.git` itself, or the directory a
	// `.git` file names).
	GitDir string `json:"git_dir"`
	// Nested is true for every repository below the root.
	Nested bool `json:"nested,omitempty"`
	// Linked is true when `.git` is a file naming the git directory (a linked
	// worktree or a submodule).
	Linked bool `json:"linked,omitempty"`
	// Outside is true when the git directory lies outside the folder: the
	// copy then shares it with the folder and it cannot be judged by
	// comparing copy and base.
	Outside bool `json:"outside,omitempty"`
	// Untrusted names what of the repository's `.git` points elsewhere or
	// cannot be read (see trust.go); such a repository is Outside too.
	Untrusted []string `json:"untrusted,omitempty"`
}

// Find lists the repositories in the folder root: root's own `.git`
// (directory or file) and every repository nested below it. It never
// descends into a git directory.
func Find(root string) ([]Repo, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("gitstate: find: %w", err)
	}
	var repos []Repo
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			return nil // an unreadable subdirectory holds nothing we can judge
		}
		if d.Name() == ".git" && p != root {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() {
			return nil
		}
		r, ok, err := Probe(root, p)
		if err != nil {
			return err
		}
		if ok {
			repos = append(repos, r)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("gitstate: find in %s: %w", root, err)
	}
	return repos, nil
}

// Probe tells whether dir (inside root) holds a repository, and which. The
// engine's own walk may call it for each directory that has a `.git` entry.
func Probe(root, dir string) (Repo, bool, error) {
	dotgit := filepath.Join(dir, ".git")
	st, err := os.Lstat(dotgit)
	if err != nil {
		return Repo{}, false, nil
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil {
		return Repo{}, false, fmt.Errorf("gitstate: probe %s: %w", dir, err)
	}
	r := Repo{Path: filepath.ToSlash(rel), Nested: rel != "."}
	switch {
	case st.IsDir():
		r.GitDir = dotgit
	case st.Mode().IsRegular():
		r.Linked = true
		b, err := os.ReadFile(dotgit)
		if err != nil {
			return Repo{}, false, fmt.Errorf("gitstate: probe %s: %w", dotgit, err)
		}
		gd, err := ParseGitFile(b)
		if err != nil {
			// A finding, not an error: one bad `.git` file must not stop
			// status, commit or rollback of everything else.
			r.Outside = true
			r.Untrusted = []string{fmt.Sprintf("%s is not a gitdir file git can read (%v)", relGit(r.Path), err)}
			return r, true, nil
		}
		if !filepath.IsAbs(gd) {
			gd = filepath.Join(dir, gd)
		}
		r.GitDir = filepath.Clean(gd)
	default:
		return Repo{}, false, nil // a symlink or special file named .git is not followed
	}
	if rr, err := filepath.Rel(root, r.GitDir); trustPointers && (err != nil || rr == ".." || strings.HasPrefix(rr, "../")) {
		if _, err := os.Stat(filepath.Join(r.GitDir, "HEAD")); err != nil {
			return Repo{}, false, nil
		}
		r.Outside = true
		return r, true, nil
	}
	if f := probeFindings(root, &r); len(f) > 0 {
		r.Outside, r.Untrusted = true, f
		return r, true, nil
	}
	if _, err := os.Stat(filepath.Join(r.GitDir, "HEAD")); err != nil {
		return Repo{}, false, nil // a `.git` that holds no repository is plain files
	}
	return r, true, nil
}

// relGit is the `.git` of the repository at path, as a person reads it.
func relGit(path string) string {
	if path == "." || path == "" {
		return ".git"
	}
	return path + "/.git"
}

// ParseGitFile reads a `.git` file ("gitdir: <path>") and returns the path.
func ParseGitFile(b []byte) (string, error) {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	line = bytes.TrimRight(line, "\r")
	rest, ok := bytes.CutPrefix(line, []byte("gitdir:"))
	if !ok {
		return "", fmt.Errorf("no gitdir line")
	}
	p := string(bytes.TrimSpace(rest))
	if p == "" || strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("empty or invalid gitdir path")
	}
	return p, nil
}
