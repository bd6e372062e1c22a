package kernel

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/kulehq/kule/kernel/internal/gitstate"
	"github.com/kulehq/kule/kernel/internal/task"
)

// RollbackReport is what a rollback threw away.
type RollbackReport struct {
	// Changes is the number of file changes thrown away.
	Changes int
	// Git says, one line per repository, what of the copy's `.git` was
	// reset to the folder's.
	Git []string
}

// rollbackGit makes each repository the task changed in its copy (effs, as
// status found them) mean what the folder's repository means: its refs,
// HEAD, index, config, hooks and every other file of the git directory are
// the folder's again, what pointed elsewhere is gone, a repository the
// task made is removed and one it removed comes back. Object files the
// task added stay (nothing refers to them; git gc removes them); object
// files the folder holds and the copy lacks are copied, so every ref
// resolves. The copy is written beneath its root without following links
// (os.Root), and the git base is taken again from the copy afterwards.
// It returns one line per repository reset.
func rollbackGit(t *task.Task, effs []*gitstate.Effects) ([]string, error) {
	if len(effs) == 0 {
		return nil, nil
	}
	rt, err := os.OpenRoot(t.Paths.Copy)
	if err != nil {
		return nil, fmt.Errorf("git: open the copy: %w", err)
	}
	defer rt.Close()
	var lines []string
	for _, e := range effs {
		if !validRepoDir(e.Repo) {
			return lines, fmt.Errorf("git: repository path %q", e.Repo)
		}
		dotgit := ".git"
		if e.Repo != "." {
			dotgit = filepath.Join(filepath.FromSlash(e.Repo), ".git")
		}
		done, err := resetRepo(rt, t.Folder, e.Repo, dotgit)
		if err != nil {
			return lines, fmt.Errorf("git: reset %s: %w", filepath.ToSlash(dotgit), err)
		}
		lines = append(lines, rollbackLine(e, done))
	}
	if err := saveGitBase(t); err != nil {
		return lines, fmt.Errorf("git: take the base again: %w", err)
	}
	return lines, nil
}

func validRepoDir(p string) bool {
	return p == "." || (p != "" && filepath.IsLocal(p) && filepath.ToSlash(filepath.Clean(p)) == p)
}

// resetRepo makes the copy's dotgit (and the git directory it names, when
// that lies in the folder) what the folder holds. It says what it did when
// that is more than a reset of the git directory in place.
func resetRepo(rt *os.Root, folder, repo, dotgit string) (string, error) {
	src := filepath.Join(folder, dotgit)
	st, err := os.Lstat(src)
	if errors.Is(err, fs.ErrNotExist) {
		if err := removeIn(rt, dotgit); err != nil {
			return "", err
		}
		return "removed (the folder has no repository there)", nil
	}
	if err != nil {
		return "", err
	}
	if err := realParents(rt, dotgit); err != nil {
		return "", err
	}
	switch {
	case st.IsDir():
		return resetGitDir(rt, src, dotgit)
	case st.Mode().IsRegular():
		// A linked worktree or submodule: its `.git` file, then the git
		// directory it names if that lies in the folder.
		if err := removeIn(rt, dotgit); err != nil {
			return "", err
		}
		if err := copyTree(rt, src, dotgit); err != nil {
			return "", err
		}
		r, ok, err := gitstate.Probe(folder, filepath.Join(folder, filepath.FromSlash(repo)))
		if err != nil || !ok || r.Outside {
			return ".git file put back (its git directory lies outside the folder)", err
		}
		rel, err := filepath.Rel(folder, r.GitDir)
		if err != nil || !filepath.IsLocal(rel) {
			return ".git file put back", nil
		}
		if err := realParents(rt, rel); err != nil {
			return "", err
		}
		if _, err := resetGitDir(rt, r.GitDir, rel); err != nil {
			return "", err
		}
		return ".git file and " + filepath.ToSlash(rel) + " put back", nil
	}
	return "", fmt.Errorf("the folder's %s is neither a directory nor a file; nothing of it was copied", dotgit)
}

// resetGitDir makes the copy's git directory rel hold every file of the
// folder's git directory src, keeping only object files the copy has and
// the folder lacks.
func resetGitDir(rt *os.Root, src, rel string) (string, error) {
	st, err := rt.Lstat(rel)
	if err != nil || !st.IsDir() {
		if err := removeIn(rt, rel); err != nil {
			return "", err
		}
		return "made anew from the folder's", copyTree(rt, src, rel)
	}
	names, err := readDirIn(rt, rel)
	if err != nil {
		return "", err
	}
	for _, n := range names {
		if n != "objects" {
			if err := removeIn(rt, filepath.Join(rel, n)); err != nil {
				return "", err
			}
		}
	}
	fents, err := os.ReadDir(src)
	if err != nil {
		return "", err
	}
	for _, d := range fents {
		// A lock file is a git command of the person's at work: the copy
		// gets the state, not the command's claim on it.
		if d.Name() != "objects" && !strings.HasSuffix(d.Name(), ".lock") {
			if err := copyTree(rt, filepath.Join(src, d.Name()), filepath.Join(rel, d.Name())); err != nil {
				return "", err
			}
		}
	}
	return "", resetObjects(rt, filepath.Join(src, "objects"), filepath.Join(rel, "objects"))
}

// resetObjects gives the copy's objects directory the folder's alternates
// files (or none) and every object file of the folder it lacks.
func resetObjects(rt *os.Root, src, rel string) error {
	if _, err := os.Lstat(src); errors.Is(err, fs.ErrNotExist) {
		return removeIn(rt, rel)
	}
	st, err := rt.Lstat(rel)
	if err != nil || !st.IsDir() {
		if err := removeIn(rt, rel); err != nil {
			return err
		}
		return copyTree(rt, src, rel)
	}
	// info/ holds the alternates: the folder's, whole.
	if err := removeIn(rt, filepath.Join(rel, "info")); err != nil {
		return err
	}
	if err := copyTree(rt, filepath.Join(src, "info"), filepath.Join(rel, "info")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, d := range ents {
		if !d.IsDir() || d.Name() == "info" {
			continue
		}
		sub := filepath.Join(rel, d.Name())
		if st, err := rt.Lstat(sub); err != nil || !st.IsDir() {
			if err := removeIn(rt, sub); err != nil {
				return err
			}
			if err := copyTree(rt, filepath.Join(src, d.Name()), sub); err != nil {
				return err
			}
			continue
		}
		files, err := os.ReadDir(filepath.Join(src, d.Name()))
		if err != nil {
			return err
		}
		for _, f := range files {
			dst := filepath.Join(sub, f.Name())
			if _, err := rt.Lstat(dst); err == nil {
				continue // objects are immutable: same name, same content
			}
			if err := copyTree(rt, filepath.Join(src, d.Name(), f.Name()), dst); err != nil {
				return err
			}
		}
	}
	return nil
}

// realParents refuses rel when a directory on its way is a symbolic link:
// the file rollback has put the folder's directories back by now, so a
// link there is something to look at, not to write through.
func realParents(rt *os.Root, rel string) error {
	parts := strings.Split(filepath.ToSlash(rel), "/")
	for i := 1; i < len(parts); i++ {
		p := filepath.Join(parts[:i]...)
		st, err := rt.Lstat(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				if err := rt.Mkdir(p, 0o755); err != nil {
					return err
				}
				continue
			}
			return err
		}
		if !st.IsDir() {
			return fmt.Errorf("%s in the copy is not a directory; nothing was written through it (roll back again once the file rollback put it back, or delete the task)", filepath.ToSlash(p))
		}
	}
	return nil
}

func removeIn(rt *os.Root, rel string) error {
	if err := rt.RemoveAll(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func readDirIn(rt *os.Root, rel string) ([]string, error) {
	f, err := rt.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// copyTree copies src (of the folder, a file, link or directory) to rel in
// the copy, which must not exist. Every write's error is checked.
func copyTree(rt *os.Root, src, rel string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(rel, r)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := rt.Mkdir(dst, info.Mode().Perm()|0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return rt.Symlink(target, dst)
		case d.Type().IsRegular():
			return copyFileIn(rt, p, dst, info.Mode().Perm())
		}
		return nil
	})
}

func copyFileIn(rt *os.Root, src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := rt.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// rollbackLine says what rollback reset of one repository, from what
// status found the task had changed there.
func rollbackLine(e *gitstate.Effects, done string) string {
	where := "git: "
	if e.Repo != "." {
		where = fmt.Sprintf("git (%s): ", e.Repo)
	}
	var what []string
	switch {
	case e.Made:
		what = append(what, "the repository the task made")
	case e.Gone:
		what = append(what, "the repository the task removed")
	}
	for _, f := range e.Untrusted {
		what = append(what, "removed: "+f)
	}
	var refs []string
	for _, r := range e.Refs {
		refs = append(refs, strings.TrimPrefix(strings.TrimPrefix(r.Name, "refs/heads/"), "refs/"))
	}
	if len(refs) > 0 {
		what = append(what, "refs "+strings.Join(refs, ", "))
	}
	if n := len(e.Index); n > 0 {
		what = append(what, fmt.Sprintf("index (%d %s)", n, pluralWord(n, "entry", "entries")))
	}
	if len(e.StagedDiffers) > 0 {
		what = append(what, "staged content")
	}
	for _, c := range e.Config {
		what = append(what, c.Name)
	}
	for _, h := range e.Hooks {
		what = append(what, "hook "+h.Name)
	}
	if n := len(e.Objects.Loose) + len(e.Objects.Packs); n > 0 {
		what = append(what, fmt.Sprintf("%d new object %s stay (nothing refers to them; git gc removes them)", n, pluralWord(n, "file", "files")))
	}
	if e.Made && strings.HasPrefix(done, "removed") {
		return where + "removed the repository the task made (the folder has none there)"
	}
	line := where + "reset to the folder's"
	if len(what) > 0 {
		line += ": " + strings.Join(what, "; ")
	}
	if done != "" {
		line += " (" + done + ")"
	}
	return line
}

func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
