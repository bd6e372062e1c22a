package gitstate

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

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
