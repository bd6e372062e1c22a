package agents

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kulehq/kule/kernel/internal/lockfile"
)

// A profile approved in the approvals.json an older Kule wrote still runs,
// and its approval survives the next approval, now kept in kule.lock.
func TestOldApprovalsFileStillHonoured(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	mine := Profile{Name: "mine", Command: []string{"my-agent"}}
	other := Profile{Name: "other", Command: []string{"other-agent"}}
	old := `{"agents": {"mine": {"sha256": "` + mine.Hash() + `", "approved": "2026-01-02T03:04:05Z"}}}` + "\n"
	if err := os.WriteFile(filepath.Join(home, "approvals.json"), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := CheckApproved(home, mine); err != nil {
		t.Fatalf("a profile approved in approvals.json: %v", err)
	}
	if err := CheckApproved(home, other); !errors.Is(err, ErrNotApproved) {
		t.Fatalf("a profile never approved: %v", err)
	}
	if err := Approve(home, other, []Profile{mine, other}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []Profile{mine, other} {
		if err := CheckApproved(home, p); err != nil {
			t.Fatalf("%s after the move to kule.lock: %v", p.Name, err)
		}
	}
	lock, err := os.ReadFile(ApprovalsPath(home))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(lock), "sha256:"+mine.Hash()) || !strings.Contains(string(lock), "sha256:"+other.Hash()) {
		t.Fatalf("kule.lock does not pin both profiles by sha256:\n%s", lock)
	}
	// Removing the lock takes every approval back; the old file is not
	// read again.
	if err := os.Remove(lockfile.Path(home)); err != nil {
		t.Fatal(err)
	}
	if err := CheckApproved(home, mine); !errors.Is(err, ErrNotApproved) {
		t.Fatalf("with kule.lock removed, the migrated approval still counts: %v", err)
	}
}

// Adding a profile keeps what agents.toml held, keeps its mode, and writes
// through a person's link to the file it names, leaving the link in place.
func TestAppendPersonalKeepsFileModeAndLink(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	dotfiles := filepath.Join(t.TempDir(), "agents.toml")
	first := Profile{Name: "first", Command: []string{"first-agent"}}
	if err := os.WriteFile(dotfiles, []byte(first.TOML()), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dotfiles, PersonalPath(home)); err != nil {
		t.Fatal(err)
	}
	second := Profile{Name: "second", Command: []string{"second-agent"}}
	if err := AppendPersonal(home, second, []Profile{first}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(PersonalPath(home)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("agents.toml is no longer the person's link: %v %v", fi.Mode(), err)
	}
	b, err := os.ReadFile(dotfiles)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(b, "agents.toml")
	if err != nil || len(got) != 2 || got[0].Hash() != first.Hash() || got[1].Hash() != second.Hash() {
		t.Fatalf("agents.toml holds %d profiles (%v), want first then second:\n%s", len(got), err, b)
	}
	if fi, _ := os.Stat(dotfiles); fi.Mode().Perm() != 0o640 {
		t.Fatalf("agents.toml is %v now, want its 0640 kept", fi.Mode().Perm())
	}
}
