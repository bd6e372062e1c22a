package agentrun

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/internal/agents"
	"github.com/kulehq/kule/kernel/internal/beneath"
)

// homeRun is a run of a Codex-like profile on a fresh task, with the
// person's ~/.codex holding a login and instructions.
func homeRun(t *testing.T) (*Run, string) {
	t.Helper()
	base := t.TempDir()
	home := filepath.Join(base, "home")
	os.MkdirAll(filepath.Join(home, ".codex"), 0o700)
	os.WriteFile(filepath.Join(home, ".codex", "auth.json"), []byte("OLD"), 0o600)
	os.WriteFile(filepath.Join(home, ".codex", "AGENTS.md"), []byte("MINE"), 0o600)
	k, err := kernel.New(kernel.Config{Home: filepath.Join(base, "kule")})
	if err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(base, "folder")
	os.MkdirAll(folder, 0o755)
	rep, err := k.NewTask(context.Background(), folder)
	if err != nil {
		t.Fatal(err)
	}
	p := agents.Profile{Name: "codexlike", Command: []string{"x"}, OwnHome: "CODEX_HOME", HomeOf: ".codex",
		Login: []string{".codex/auth.json"}, ReadOnly: []string{".codex/AGENTS.md", ".codex/prompts"}}
	return &Run{Task: rep.Task, Profile: p, k: k, o: Options{Home: home, HomesRoot: filepath.Join(base, "homes")}}, home
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// The person's login and instructions are placed in the task's home; a
// login the run renewed goes back to the person's file, and leaves the
// task; one changed outside meanwhile is left alone.
func TestLoginIsPlacedAndReturned(t *testing.T) {
	r, home := homeRun(t)
	h, err := r.ownHome("")
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(h.Dir, "auth.json")); got != "OLD" {
		t.Errorf("login placed: %q", got)
	}
	if got := read(t, filepath.Join(h.Dir, "AGENTS.md")); got != "MINE" {
		t.Errorf("instructions placed: %q", got)
	}
	os.WriteFile(filepath.Join(h.Dir, "auth.json"), []byte("RENEWED"), 0o600)
	if notes := h.after("codexlike"); len(notes) != 0 {
		t.Errorf("notes: %q", notes)
	}
	if got := read(t, filepath.Join(home, ".codex", "auth.json")); got != "RENEWED" {
		t.Errorf("the person's login after the run: %q", got)
	}
	if _, err := os.Lstat(filepath.Join(h.Dir, "auth.json")); err == nil {
		t.Error("the login stays in the task's home after the run")
	}

	h, err = r.ownHome("")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(home, ".codex", "auth.json"), []byte("OUTSIDE"), 0o600)
	os.WriteFile(filepath.Join(h.Dir, "auth.json"), []byte("STALE"), 0o600)
	notes := h.after("codexlike")
	if got := read(t, filepath.Join(home, ".codex", "auth.json")); got != "OUTSIDE" || len(notes) != 1 || !strings.Contains(notes[0], "changed outside Kule") {
		t.Errorf("a login changed outside during the run: now %q, notes %q", got, notes)
	}
}

// A run that leaves a link where its login was must not have Kule copy
// what the link names (a file of the person's it cannot read) into the
// person's login. With the guard off, the file's content is copied.
func TestLoginLinkIsNotFollowed(t *testing.T) {
	for _, guard := range []bool{true, false} {
		t.Run(map[bool]string{true: "guarded", false: "guard off"}[guard], func(t *testing.T) {
			r, home := homeRun(t)
			secret := filepath.Join(t.TempDir(), "secret")
			os.WriteFile(secret, []byte("SECRET"), 0o600)
			h, err := r.ownHome("")
			if err != nil {
				t.Fatal(err)
			}
			if !guard {
				beneath.FollowLinksForTest(t)
			}
			os.Remove(filepath.Join(h.Dir, "auth.json"))
			if err := os.Symlink(secret, filepath.Join(h.Dir, "auth.json")); err != nil {
				t.Fatal(err)
			}
			h.after("codexlike")
			got := read(t, filepath.Join(home, ".codex", "auth.json"))
			if guard && got != "OLD" {
				t.Errorf("the person's login now holds %q", got)
			}
			if !guard && got != "SECRET" {
				t.Errorf("with the guard off the link should be followed (the attack); the login holds %q", got)
			}
		})
	}
}

// Instructions a run changed or made are taken out of the task's home
// and kept for review; a folder of them too.
func TestChangedInstructionsAreKeptAside(t *testing.T) {
	r, _ := homeRun(t)
	h, err := r.ownHome("")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(h.Dir, "AGENTS.md"), []byte("POISON"), 0o600)
	os.MkdirAll(filepath.Join(h.Dir, "prompts"), 0o700)
	os.WriteFile(filepath.Join(h.Dir, "prompts", "p.md"), []byte("PROMPT"), 0o600)
	notes := h.after("codexlike")
	if len(notes) != 1 || !strings.Contains(notes[0], "AGENTS.md, prompts") {
		t.Errorf("notes %q", notes)
	}
	if got := read(t, filepath.Join(h.Changes, "AGENTS.md")) + read(t, filepath.Join(h.Changes, "prompts", "p.md")); got != "POISONPROMPT" {
		t.Errorf("kept aside: %q", got)
	}
	if _, err := os.Lstat(filepath.Join(h.Dir, "prompts")); err == nil {
		t.Error("the run's prompts stay in its home")
	}
	if h, err = r.ownHome(""); err != nil || read(t, filepath.Join(h.Dir, "AGENTS.md")) != "MINE" {
		t.Errorf("the next run's AGENTS.md: %q %v", read(t, filepath.Join(h.Dir, "AGENTS.md")), err)
	}
}

// What the agent writes itself as it starts (self_written) is taken out
// after the run without a word; anything else beside it is still told.
func TestSelfWrittenIsTakenOutQuietly(t *testing.T) {
	r, _ := homeRun(t)
	r.Profile.SelfWritten = []string{".codex/prompts/.system"}
	h, err := r.ownHome("")
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(h.Dir, "prompts", ".system"), 0o700)
	os.WriteFile(filepath.Join(h.Dir, "prompts", ".system", "bundled.md"), []byte("BUNDLED"), 0o600)
	if notes := h.after("codexlike"); len(notes) != 0 {
		t.Errorf("notes for what the agent writes itself: %q", notes)
	}
	if _, err := os.Lstat(filepath.Join(h.Dir, "prompts")); err == nil {
		t.Error("what the agent wrote itself stays in its home")
	}
	h, _ = r.ownHome("")
	os.MkdirAll(filepath.Join(h.Dir, "prompts", ".system"), 0o700)
	os.WriteFile(filepath.Join(h.Dir, "prompts", "mine.md"), []byte("PLANTED"), 0o600)
	if notes := h.after("codexlike"); len(notes) != 1 || !strings.Contains(notes[0], "prompts") {
		t.Errorf("a planted prompt beside the agent's own: notes %q", notes)
	}
}

// A folder of the person's kept elsewhere and linked into ~/.codex (as
// dotfiles are) is placed as what it names.
func TestLinkedInstructionsArePlaced(t *testing.T) {
	r, home := homeRun(t)
	dots := filepath.Join(t.TempDir(), "dotfiles-prompts")
	os.MkdirAll(dots, 0o700)
	os.WriteFile(filepath.Join(dots, "review.md"), []byte("REVIEW"), 0o600)
	if err := os.Symlink(dots, filepath.Join(home, ".codex", "prompts")); err != nil {
		t.Fatal(err)
	}
	h, err := r.ownHome("")
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(h.Dir, "prompts", "review.md")); got != "REVIEW" {
		t.Errorf("the linked prompts placed: %q", got)
	}
	if notes := h.after("codexlike"); len(notes) != 0 {
		t.Errorf("notes after a run that changed nothing: %q", notes)
	}
}
