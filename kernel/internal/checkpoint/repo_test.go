package checkpoint

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The store is a git repository a person can inspect with git itself.

func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("git is not installed: %v", err)
		}
		t.Skip("git is not installed")
	}
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestStoreIsABareRepositoryGitReads(t *testing.T) {
	t.Parallel()
	needGit(t)
	s := newStore(t)
	if s.Dir() == "" || filepath.Base(s.Dir()) != "checkpoints" {
		t.Fatalf("Dir = %q", s.Dir())
	}
	repo := filepath.Join(s.Dir(), StoreDir)
	if got := strings.TrimSpace(git(t, repo, "rev-parse", "--is-bare-repository")); got != "true" {
		t.Fatalf("git says store.git is bare: %s", got)
	}
	content := []byte("what the commit replaced\n")
	id, err := s.PutBytes(content)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, bytes.Repeat([]byte("x"), 3<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	big, _, err := s.PutFile(p)
	if err != nil {
		t.Fatal(err)
	}
	git(t, repo, "fsck", "--strict", "--no-progress", "--no-dangling")
	if got := git(t, repo, "cat-file", "blob", id); got != string(content) {
		t.Errorf("git cat-file blob %s = %q, want %q", id, got, content)
	}
	if got := strings.TrimSpace(git(t, repo, "cat-file", "-s", big)); got != "3145728" {
		t.Errorf("git cat-file -s of the large blob = %s", got)
	}
}

// A store.git that is no longer a repository Kule can use is ErrDamaged,
// says what to do, and is left as it is.
func TestOpenRefusesADamagedRepository(t *testing.T) {
	t.Parallel()
	for name, damage := range map[string]func(t *testing.T, repo string){
		"no HEAD": func(t *testing.T, repo string) {
			if err := os.Remove(filepath.Join(repo, "HEAD")); err != nil {
				t.Fatal(err)
			}
		},
		"HEAD unreadable": func(t *testing.T, repo string) {
			if err := os.Remove(filepath.Join(repo, "HEAD")); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(filepath.Join(repo, "HEAD"), 0o700); err != nil {
				t.Fatal(err)
			}
		},
		"config does not parse": func(t *testing.T, repo string) { writeFile(t, filepath.Join(repo, "config"), "[core\n") },
		"sha256 objects": func(t *testing.T, repo string) {
			writeFile(t, filepath.Join(repo, "config"), "[core]\n\trepositoryformatversion = 1\n\tbare = true\n[extensions]\n\tobjectformat = sha256\n")
		},
		"noop-v1 in format 0": func(t *testing.T, repo string) {
			writeFile(t, filepath.Join(repo, "config"), "[core]\n\tbare = true\n[extensions]\n\tnoop-v1 = true\n")
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "checkpoints")
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			repo := filepath.Join(dir, StoreDir)
			damage(t, repo)
			_, err = Open(dir)
			if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "it was left as it is") {
				t.Fatalf("Open = %v, want ErrDamaged saying the store was left as it is", err)
			}
			if _, err := os.Stat(repo); err != nil {
				t.Fatalf("a refused Open removed store.git: %v", err)
			}
		})
	}
	t.Run("noop extensions are fine", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "checkpoints")
		s, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		writeFile(t, filepath.Join(dir, StoreDir, "config"), "[core]\n\trepositoryformatversion = 1\n\tbare = true\n[extensions]\n\tnoop = true\n\tnoop-v1 = true\n")
		s, err = Open(dir)
		if err != nil {
			t.Fatalf("Open with noop extensions: %v", err)
		}
		s.Close()
	})
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Several processes may open a task's store for the first time at once:
// each gets a working store, and one store.git is made.
func TestOpenRaceMakesOneStore(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "checkpoints")
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			s, err := Open(dir)
			if err == nil {
				_, err = s.PutBytes([]byte("same"))
				s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open %d: %v", i, err)
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() != StoreDir {
			t.Errorf("left behind in the checkpoints directory: %s", e.Name())
		}
	}
}

// A stream that ends early or fails leaves no object behind.
func TestPutShortOrFailingStream(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	_, n, err := s.put(strings.NewReader("short"), 100)
	if err != nil || n != 5 {
		t.Fatalf("put of a short stream = %d, %v; want 5 bytes and no error (the caller sees n < size)", n, err)
	}
	boom := errors.New("boom")
	if _, _, err := s.put(io.MultiReader(strings.NewReader("abc"), errReader{boom}), 10); !errors.Is(err, boom) {
		t.Fatalf("put of a failing stream = %v, want its error", err)
	}
	var objects int
	err = filepathWalk(filepath.Join(s.Dir(), StoreDir, "objects"), func(p string) {
		if filepath.Base(filepath.Dir(p)) != "pack" && filepath.Base(filepath.Dir(p)) != "info" {
			objects++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if objects != 0 {
		t.Errorf("%d object files left after short and failing puts", objects)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func filepathWalk(root string, fn func(p string)) error {
	return filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			fn(p)
		}
		return nil
	})
}
