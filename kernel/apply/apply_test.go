package apply

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kulehq/kule/kernel/effects"
	"github.com/kulehq/kule/kernel/relpath"
)

func opener(files map[string]string) Opener {
	return func(src string) (io.ReadCloser, error) {
		c, ok := files[src]
		if !ok {
			return nil, os.ErrNotExist
		}
		return io.NopCloser(strings.NewReader(c)), nil
	}
}

func TestRunRefusesToStageThroughALink(t *testing.T) {
	t.Parallel()
	root, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "docs")); err != nil {
		t.Fatal(err)
	}
	j := &Journal{Kind: "commit", Ops: []Op{{Kind: Replace, Path: "docs/passwd", Type: effects.TypeFile, Src: "x", Mode: 0o644, UID: -1}}}
	err := Run(root, filepath.Join(t.TempDir(), "journal"), j, opener(map[string]string{"x": "owned"}), nil)
	if !errors.Is(err, ErrLinkInPath) {
		t.Fatalf("Run = %v, want ErrLinkInPath", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("a file was written through the link: %v", ents)
	}
}

func TestRunRefusesPathsThatLeaveTheRoot(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"../x", "/etc/passwd", "a/../../x", ""} {
		j := &Journal{Kind: "commit", Ops: []Op{{Kind: Remove, Path: "ok"}, {Kind: Remove, Path: "a"}}}
		j.Ops[1].Path = "a"
		j.Ops[0].Path = ""
		j.Ops[0].Path = j.Ops[0].Path + pathOf(p)
		if err := Run(t.TempDir(), filepath.Join(t.TempDir(), "journal"), j, nil, nil); err == nil {
			t.Errorf("Run accepted the path %q", p)
		}
	}
}

func pathOf(s string) relpath.Path { return relpath.Path(s) }

func FuzzReadJournal(f *testing.F) {
	good, _ := json.Marshal(&Journal{ID: "abc", Kind: "commit", Phase: PhaseStaged, Ops: []Op{{Kind: Move, Path: "b", From: "a"}}})
	f.Add(good)
	f.Add([]byte(`{"ops":[{"path":{"base64":"/w=="}}]}`))
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "journal")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		j, err := ReadJournal(p)
		if err != nil {
			if !errors.Is(err, ErrJournalDamaged) {
				t.Fatalf("error %v is not ErrJournalDamaged", err)
			}
			return
		}
		// Whatever it names, Recover never acts outside the root: run it
		// on an empty root inside a fence directory and check the fence.
		fence := t.TempDir()
		root := filepath.Join(fence, "root")
		if err := os.Mkdir(root, 0o755); err != nil {
			t.Fatal(err)
		}
		_, _, _ = Recover(root, p, nil)
		ents, _ := os.ReadDir(fence)
		if len(ents) != 1 {
			t.Fatalf("recovering journal %+v changed what lies beside the root: %v", j, ents)
		}
	})
}
