package gitstate

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A stored snapshot or base that was damaged (or written by hand) is
// refused with ErrSnapshot, never read as some other repository state.

func TestDamagedSnapshotRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t, nil)
	good, err := w.base.Encode()
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(good, &fields); err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(m map[string]any){
		"another format": func(m map[string]any) { m["format"] = 99 },
		"no HEAD":        func(m map[string]any) { delete(m["refs"].(map[string]any), "HEAD") },
		"bad ref name":   func(m map[string]any) { m["refs"].(map[string]any)["refs/heads/a..b"] = strings.Repeat("a", 40) },
		"upper-case id":  func(m map[string]any) { m["refs"].(map[string]any)["refs/heads/x"] = strings.Repeat("A", 40) },
		"bad pack name": func(m map[string]any) {
			m["objects"].(map[string]any)["packs"] = []string{"../pack-x.pack"}
		},
		"bad hook name":   func(m map[string]any) { m["hooks"] = map[string]string{"../config": strings.Repeat("a", 64)} },
		"bad hook hash":   func(m map[string]any) { m["hooks"] = map[string]string{"pre-commit": "zz"} },
		"unknown config":  func(m map[string]any) { m["config"] = map[string]string{"config.d": strings.Repeat("a", 64)} },
		"unknown pointer": func(m map[string]any) { m["pointers"] = map[string]string{"objects/info/nope": "/x"} },
		"pointer with NUL": func(m map[string]any) {
			m["pointers"] = map[string]string{"objects/info/alternates": "/x\x00"}
		},
		"bad index sum": func(m map[string]any) { m["index_sum"] = "xyz" },
	} {
		t.Run(name, func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal(good, &m); err != nil {
				t.Fatal(err)
			}
			edit(m)
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := DecodeSnapshot(b); !errors.Is(err, ErrSnapshot) {
				t.Fatalf("DecodeSnapshot of a snapshot with %s = %v, want ErrSnapshot", name, err)
			}
		})
	}
	if _, err := DecodeSnapshot([]byte("{")); !errors.Is(err, ErrSnapshot) {
		t.Fatalf("DecodeSnapshot of broken JSON = %v, want ErrSnapshot", err)
	}
}

// Every cut of a saved base, even with its checksum made to match, is
// refused: the decoder never reads past what is there.
func TestCutBaseRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t, func(folder string) {
		run(t, folder, "checkout", "-q", "-b", "side")
	})
	write(t, filepath.Join(w.copy, "new.txt"), "n\n")
	run(t, w.copy, "add", "new.txt")
	_, p := savedBase(t, w.copy)
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LoadBase(p); err != nil {
		t.Fatalf("LoadBase of what Save wrote: %v", err)
	}
	if b, err := LoadBase(filepath.Join(t.TempDir(), "none")); err != nil || len(b.Repos) != 0 {
		t.Fatalf("LoadBase of no file = %v, %v; want an empty base", b, err)
	}
	body := raw[:len(raw)-4]
	for cut := len(baseMagic); cut < len(body); cut++ {
		b := append([]byte(nil), body[:cut]...)
		b = binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
		if _, err := DecodeBase(b); !errors.Is(err, ErrSnapshot) {
			t.Fatalf("DecodeBase of the base cut at %d of %d bytes = %v, want ErrSnapshot", cut, len(body), err)
		}
	}
	flipped := append([]byte(nil), raw...)
	flipped[len(baseMagic)+3] ^= 0x20
	if _, err := DecodeBase(flipped); !errors.Is(err, ErrSnapshot) {
		t.Fatalf("DecodeBase of a base with a flipped byte = %v, want ErrSnapshot", err)
	}
	if _, err := DecodeBase([]byte(baseMagic)); !errors.Is(err, ErrSnapshot) {
		t.Fatalf("DecodeBase of the magic alone = %v, want ErrSnapshot", err)
	}
}

// Undo takes a commit back only while the folder still holds what the
// commit wrote; a person's later commit on the branch is a conflict and
// nothing is changed.
func TestRevertRefusesWhatMovedSince(t *testing.T) {
	t.Parallel()
	w := newWorld(t, nil)
	write(t, filepath.Join(w.copy, "c.txt"), "sea\n")
	run(t, w.copy, "add", "c.txt")
	run(t, w.copy, "commit", "-q", "-m", "task")
	eff := w.compare()
	undo, err := Apply(w.base, w.folderGit(), w.copyGit(), eff, ApplyOptions{})
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	w.syncFiles("c.txt")
	write(t, filepath.Join(w.folder, "d.txt"), "dee\n")
	run(t, w.folder, "add", "d.txt")
	run(t, w.folder, "commit", "-q", "-m", "person")
	before := run(t, w.folder, "rev-parse", "main")
	err = Revert(w.folderGit(), undo)
	if !errors.Is(err, ErrMoved) || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("Revert after the person moved main = %v, want ErrMoved saying nothing was changed", err)
	}
	if got := run(t, w.folder, "rev-parse", "main"); got != before {
		t.Errorf("a refused Revert moved main to %s", got)
	}
	w.fsck()
	if got := run(t, w.folder, "status", "--porcelain"); got != "" {
		t.Errorf("a refused Revert changed the index:\n%s", got)
	}
}
