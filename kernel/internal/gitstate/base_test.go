package gitstate

import (
	"crypto/sha1"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// A base is saved in its binary form and read back the same; a base an
// older Kule saved as JSON still reads; a damaged one is ErrSnapshot.
func TestBaseLoadsBinaryAndOlderJSON(t *testing.T) {
	t.Parallel()
	w := newWorld(t, func(folder string) {
		write(t, filepath.Join(folder, "b.txt"), "b\n")
		run(t, folder, "add", ".")
		run(t, folder, "commit", "-q", "-m", "b")
	})
	run(t, w.copy, "hash-object", "-w", "--stdin") // a loose object or two
	base, err := TakeBase(w.copy)
	if err != nil {
		t.Fatal(err)
	}
	if len(base.Repos) != 1 || base.Repos[0].Snapshot.IndexSum == "" || len(base.Repos[0].Snapshot.Index) == 0 {
		t.Fatalf("base = %+v", base)
	}
	p := filepath.Join(t.TempDir(), "git.json")
	if err := base.Save(p); err != nil {
		t.Fatal(err)
	}
	bin, _ := os.ReadFile(p)
	old, err := json.Marshal(base)
	if err != nil {
		t.Fatal(err)
	}
	for name, raw := range map[string][]byte{"binary": bin, "json": old} {
		got, err := DecodeBase(raw)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, r := range got.Repos {
			if _, err := r.Snapshot.index(); err != nil {
				t.Fatalf("%s: index of %s: %v", name, r.Path, err)
			}
		}
		if d := cmp.Diff(base, got, cmpopts.EquateEmpty(), cmpopts.IgnoreUnexported(Snapshot{})); d != "" {
			t.Errorf("%s round trip (-saved +loaded):\n%s", name, d)
		}
	}
	for i := len(baseMagic); i < len(bin); i += 7 {
		bad := append([]byte(nil), bin...)
		bad[i] ^= 0x40
		if _, err := DecodeBase(bad); !errors.Is(err, ErrSnapshot) {
			t.Fatalf("byte %d damaged: err = %v, want ErrSnapshot", i, err)
		}
	}
	if _, err := DecodeBase(bin[:len(bin)-5]); !errors.Is(err, ErrSnapshot) {
		t.Fatalf("truncated: err = %v, want ErrSnapshot", err)
	}
}

// Compare takes an index with the bytes the base read as the base's
// entries, without decoding it; an index whose bytes changed (here by a
// git add) is read anew.
func TestCompareReadsTheIndexOnlyWhenItsBytesChanged(t *testing.T) {
	t.Parallel()
	w := newWorld(t, nil)
	taken, err := TakeBase(w.copy)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "git.json")
	if err := taken.Save(p); err != nil {
		t.Fatal(err)
	}
	base, err := LoadBase(p) // its index entries stay encoded until needed
	if err != nil {
		t.Fatal(err)
	}
	effs, err := base.CompareRepos(w.copy)
	if err != nil || len(effs) != 0 {
		t.Fatalf("untouched copy: %v, %+v", err, effs)
	}
	write(t, filepath.Join(w.copy, "new.txt"), "new\n")
	run(t, w.copy, "add", "new.txt")
	effs, err = base.CompareRepos(w.copy)
	if err != nil {
		t.Fatal(err)
	}
	if len(effs) != 1 || len(effs[0].Index) != 1 || effs[0].Index[0].Path != "new.txt" || effs[0].Index[0].Kind != "add" {
		t.Fatalf("after git add: %+v", effs)
	}
	if err := base.Check(w.folder, effs); err != nil {
		t.Fatalf("Check against the untouched folder: %v", err)
	}
	// The same repositories are found by probing the directories a walk
	// saw as by Find's own walk.
	found, err := Find(w.copy)
	if err != nil {
		t.Fatal(err)
	}
	probed, err := ProbeDirs(w.copy, []string{".", "no/such"})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(found, probed); d != "" {
		t.Errorf("ProbeDirs (-Find +ProbeDirs):\n%s", d)
	}
	if made := base.Made(found); len(made) != 0 {
		t.Errorf("Made for a known repository: %+v", made)
	}
}

// The base keeps the index file's metadata once the file had not changed
// for a second, and a status then trusts an index with the same metadata
// without hashing it. A write in place that keeps the size and puts the
// modification time back is still seen: its ctime moved.
func TestIndexMetadataIsTrustedOnlyWhileTheFileIsTheSame(t *testing.T) {
	w := newWorld(t, nil)
	if w.base.IndexStat != nil {
		t.Fatal("the base kept the metadata of an index changed a moment ago")
	}
	time.Sleep(1100 * time.Millisecond)
	retake := func() {
		b, err := Take(w.copyGit())
		if err != nil {
			t.Fatal(err)
		}
		enc, err := b.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if w.base, err = DecodeSnapshot(enc); err != nil {
			t.Fatal(err)
		}
	}
	retake()
	if w.base.IndexStat == nil {
		t.Fatal("the base kept no metadata of an index untouched for a second")
	}
	if eff := w.compare(); len(eff.Index) != 0 {
		t.Fatalf("an untouched index shows changes: %+v", eff.Index)
	}

	// The same index with a.txt staged at b.txt's blob: the first entry's
	// object id replaced and the file's checksum made again (version 2:
	// a 12-byte header, then entries of 62 bytes, the path and padding).
	idx := filepath.Join(w.copyGit(), "index")
	before, err := os.Stat(idx)
	if err != nil {
		t.Fatal(err)
	}
	other, err := os.ReadFile(idx)
	if err != nil {
		t.Fatal(err)
	}
	if binary.BigEndian.Uint32(other[4:8]) != 2 {
		t.Fatalf("index version %d, the test writes version 2", binary.BigEndian.Uint32(other[4:8]))
	}
	first := 12
	nameLen := int(binary.BigEndian.Uint16(other[first+60:first+62]) & 0xfff)
	second := first + (62+nameLen+8)&^7
	if name := string(other[first+62 : first+62+nameLen]); name != "a.txt" {
		t.Fatalf("first entry %q, want a.txt", name)
	}
	copy(other[first+40:first+60], other[second+40:second+60])
	sum := sha1.Sum(other[:len(other)-20])
	copy(other[len(other)-20:], sum[:])
	f, err := os.OpenFile(idx, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(other, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(idx, before.ModTime(), before.ModTime()); err != nil {
		t.Fatal(err)
	}
	eff := w.compare()
	found := false
	for _, c := range eff.Index {
		found = found || c.Path == "a.txt"
	}
	if !found {
		t.Fatalf("an index rewritten in place with its size and mtime kept shows %+v, want a.txt staged", eff.Index)
	}
}
