package gitstate

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
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
	bin, err := base.EncodeBase() // the one-file form of older tasks
	if err != nil {
		t.Fatal(err)
	}
	old, err := json.Marshal(base)
	if err != nil {
		t.Fatal(err)
	}
	for name, raw := range map[string][]byte{"binary": bin, "json": old, "split": nil} {
		var got *Base
		if raw != nil {
			got, err = DecodeBase(raw)
		} else {
			got, err = LoadBase(p)
		}
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
	split, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(splitMagic); i < len(split); i += 5 {
		bad := append([]byte(nil), split...)
		bad[i] ^= 0x40
		if _, err := decodeSplit(bad, filepath.Dir(p)); !errors.Is(err, ErrSnapshot) {
			t.Fatalf("split base, byte %d damaged: err = %v, want ErrSnapshot", i, err)
		}
	}
}

// The split base's entries are read only when an index is needed, and
// from the one file the base names: damage there, or an entries file of
// another base, is ErrSnapshot then; a second Save removes the first
// one's entries file.
func TestSplitBaseReadsItsOwnEntriesLate(t *testing.T) {
	t.Parallel()
	w := newWorld(t, nil)
	base, p := savedBase(t, w.copy)
	dir := filepath.Dir(p)
	files, _ := filepath.Glob(filepath.Join(dir, entriesPrefix+"*"))
	if len(files) != 1 {
		t.Fatalf("entries files %v, want one", files)
	}
	got, err := LoadBase(p)
	if err != nil {
		t.Fatal(err)
	}
	if got.Repos[0].Snapshot.lazy == nil || got.Repos[0].Snapshot.lazy.file == nil {
		t.Fatal("the entries were read with the base")
	}
	raw, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	raw[0] ^= 0x40
	if err := os.WriteFile(files[0], raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := got.Repos[0].Snapshot.index(); !errors.Is(err, ErrSnapshot) {
		t.Fatalf("damaged entries: %v, want ErrSnapshot", err)
	}
	base.Repos[0].Snapshot.Index = append(base.Repos[0].Snapshot.Index, base.Repos[0].Snapshot.Index[0])
	base.Repos[0].Snapshot.Index[len(base.Repos[0].Snapshot.Index)-1].Path = "zz-added"
	if err := base.Save(p); err != nil {
		t.Fatal(err)
	}
	now, _ := filepath.Glob(filepath.Join(dir, entriesPrefix+"*"))
	if len(now) != 1 || now[0] == files[0] {
		t.Fatalf("entries files after a second save %v (the first was %s)", now, files[0])
	}
	again, err := LoadBase(p)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := again.Repos[0].Snapshot.index()
	if err != nil || idx[len(idx)-1].Path != "zz-added" {
		t.Fatalf("the second base's index: %v", err)
	}
}

// Compare takes an index with the bytes the base read as the base's
// entries, without decoding it; an index whose bytes changed (here by a
// git add) is read anew.
func TestCompareReadsTheIndexOnlyWhenItsBytesChanged(t *testing.T) {
	t.Parallel()
	w := newWorld(t, nil)
	_, p := savedBase(t, w.copy)
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

// A base a newer Kule saved is refused as too new, not as a bad snapshot,
// and the formats this Kule writes are not mistaken for newer ones.
func TestLoadBaseRefusesANewerFormat(t *testing.T) {
	t.Parallel()
	w := newWorld(t, nil)
	_, p := savedBase(t, w.copy)
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	newer := bytes.Clone(raw)
	newer[len("KULEGITB")] = '3'
	if err := os.WriteFile(p, newer, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = LoadBase(p)
	if !errors.Is(err, ErrTooNew) || errors.Is(err, ErrSnapshot) {
		t.Fatalf("LoadBase of a version 3 base = %v, want ErrTooNew and not ErrSnapshot", err)
	}
	if !strings.Contains(err.Error(), "format 3") || !strings.Contains(err.Error(), "up to format 2") || !strings.Contains(err.Error(), "nothing was read or changed") {
		t.Fatalf("the error %q does not say which format, or that nothing changed", err)
	}
	for _, ok := range []string{baseMagic, splitMagic, "{}"} {
		if v := newerBase([]byte(ok + "rest")); v != 0 {
			t.Errorf("newerBase(%q) = %c, want 0: this Kule reads it", ok, v)
		}
	}
}

// savedBase takes the base of the repository at dir and saves it as Save
// does for a task, in a directory of the test's own; it returns the base
// and the path it was saved at.
func savedBase(t *testing.T, dir string) (*Base, string) {
	t.Helper()
	base, err := TakeBase(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "git.json")
	if err := base.Save(p); err != nil {
		t.Fatal(err)
	}
	return base, p
}
