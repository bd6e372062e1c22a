package gitstate

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Every parser of git files and of the stored snapshot has a fuzz target;
// the seeds in testdata/fuzz run as normal tests.

func FuzzDecodeSnapshot(f *testing.F) {
	f.Add([]byte(`{"format":1,"refs":{"HEAD":"ref: refs/heads/main"},"index":{"count":0,"entries":""},"objects":{"loose":""}}`))
	f.Add([]byte(`{"format":1,"refs":{"HEAD":"ref: refs/heads/main"},"index":{"count":0,"entries":""},"objects":{"loose":""},"pointers":{"objects/info/alternates":"/x\n","worktrees/w/gitdir":"/f/w/.git\n","config:include":"[include]"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeSnapshot(b)
		if err != nil {
			return
		}
		enc, err := s.Encode()
		if err != nil {
			t.Fatalf("Encode of a decoded snapshot: %v", err)
		}
		s2, err := DecodeSnapshot(enc)
		if err != nil {
			t.Fatalf("decode of an encoded snapshot: %v", err)
		}
		if diff := cmp.Diff(s, s2, cmpopts.EquateEmpty(), cmpopts.IgnoreUnexported(Snapshot{})); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
	})
}

func FuzzDecodeEntries(f *testing.F) {
	f.Add(encodeEntries([]indexEntry{{Path: "a.txt", Mode: 0o100644}, {Path: "b", Mode: 0o120000, Stage: 2, Flags: 1}}), 2)
	f.Fuzz(func(t *testing.T, b []byte, count int) {
		es, err := decodeEntries(b, count)
		if err != nil {
			return
		}
		if got := encodeEntries(es); !bytes.Equal(got, b) && len(es) > 0 {
			// Uvarints have one canonical form when written; a decoder may
			// accept a longer one. What matters: re-decoding gives the same.
			es2, err := decodeEntries(got, len(es))
			if err != nil || !cmp.Equal(es, es2) {
				t.Fatalf("round trip: %v", err)
			}
		}
	})
}

func FuzzParsePackedRefs(f *testing.F) {
	f.Add([]byte("# pack-refs with: peeled fully-peeled sorted \n" +
		"8b5ec1d00000000000000000000000000000000a refs/heads/main\n" +
		"ad08c5200000000000000000000000000000000b refs/tags/v1\n^ad08c5200000000000000000000000000000000c\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		refs, err := ParsePackedRefs(b)
		if err != nil {
			return
		}
		for name, v := range refs {
			if !ValidRefName(name) || !isHexID(v) {
				t.Fatalf("accepted %q = %q", name, v)
			}
		}
		// Dropping a ref leaves a file that still parses, without it.
		for name := range refs {
			out, dropped := withoutPacked(b, map[string]bool{name: true})
			if !dropped {
				t.Fatalf("withoutPacked did not find %q", name)
			}
			left, err := ParsePackedRefs(out)
			if err != nil {
				t.Fatalf("packed-refs after dropping %q: %v", name, err)
			}
			if _, ok := left[name]; ok {
				t.Fatalf("%q still there", name)
			}
			break
		}
	})
}

func FuzzParseLooseRef(f *testing.F) {
	f.Add([]byte("ref: refs/heads/main\n"))
	f.Add([]byte("8b5ec1d00000000000000000000000000000000a\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := ParseLooseRef(b)
		if err != nil {
			return
		}
		v2, err := ParseLooseRef([]byte(v + "\n"))
		if err != nil || v2 != v {
			t.Fatalf("value %q does not read back: %q, %v", v, v2, err)
		}
	})
}

func FuzzParseGitFile(f *testing.F) {
	f.Add([]byte("gitdir: ../.git/worktrees/wt\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseGitFile(b)
		if err == nil && p == "" {
			t.Fatal("empty path accepted")
		}
	})
}

func FuzzVerifyLoose(f *testing.F) {
	b, id := looseObject("blob", "hello\n")
	f.Add(b, id)
	f.Fuzz(func(t *testing.T, b []byte, id string) {
		_ = VerifyLoose(b, id)
	})
}

func FuzzConfigExtensions(f *testing.F) {
	f.Add([]byte("[core]\n\trepositoryformatversion = 1\n[extensions]\n\tobjectFormat = sha256\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, kv := range configExtensions(b) {
			if kv[0] == "" && kv[1] == "" {
				continue
			}
		}
	})
}

func FuzzValidRefName(f *testing.F) {
	f.Add("refs/heads/main")
	f.Add("refs/heads/../../config")
	f.Fuzz(func(t *testing.T, name string) {
		if !ValidRefName(name) {
			return
		}
		for _, part := range bytes.Split([]byte(name), []byte("/")) {
			if string(part) == ".." || string(part) == "." || len(part) == 0 {
				t.Fatalf("%q accepted with component %q", name, part)
			}
		}
	})
}

func FuzzDecodeBase(f *testing.F) {
	s := &Snapshot{Format: SnapshotFormat, Refs: map[string]string{"HEAD": "ref: refs/heads/main"},
		Index:    indexList{{Path: "a.txt", Mode: 0o100644}, {Path: "b/c", Mode: 0o100755, ID: [20]byte{1}}},
		Objects:  objectSet{Loose: idList{{1}, {2}}},
		IndexSum: "0000000000000000000000000000000000000000000000000000000000000000"}
	for _, b := range []*Base{{}, {Repos: []BaseRepo{{Path: ".", Snapshot: s}, {Path: "lib", Nested: true, Snapshot: s}}}} {
		enc, err := b.EncodeBase()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(enc)
		j, _ := jsonMarshal(b)
		f.Add(j)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		b, err := DecodeBase(raw)
		if err != nil {
			return
		}
		for _, r := range b.Repos {
			if _, err := r.Snapshot.index(); err != nil {
				return // entries are checked when first read
			}
		}
		enc, err := b.EncodeBase()
		if err != nil {
			t.Fatalf("EncodeBase of a decoded base: %v", err)
		}
		b2, err := DecodeBase(enc)
		if err != nil {
			t.Fatalf("decode of an encoded base: %v", err)
		}
		for _, r := range b2.Repos {
			if _, err := r.Snapshot.index(); err != nil {
				t.Fatalf("index of an encoded base: %v", err)
			}
		}
		if diff := cmp.Diff(b, b2, cmpopts.EquateEmpty(), cmpopts.IgnoreUnexported(Snapshot{})); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
	})
}

// FuzzDecodeSplit feeds the split form of a base (Save) beside the
// entries file it names: anything that decodes saves and reads back the
// same.
func FuzzDecodeSplit(f *testing.F) {
	s := &Snapshot{Format: SnapshotFormat, Refs: map[string]string{"HEAD": "ref: refs/heads/main"},
		Index:    indexList{{Path: "a.txt", Mode: 0o100644}, {Path: "b/c", Mode: 0o100755, ID: [20]byte{1}}},
		Objects:  objectSet{Loose: idList{{1}, {2}}},
		IndexSum: "0000000000000000000000000000000000000000000000000000000000000000"}
	b := &Base{Repos: []BaseRepo{{Path: ".", Snapshot: s}, {Path: "lib", Nested: true, Snapshot: s}}}
	entries, raw, err := b.encodeSplit()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Add([]byte(splitMagic))
	dir := f.TempDir()
	if err := os.WriteFile(filepath.Join(dir, entriesName(entries)), entries, 0o600); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		b, err := decodeSplit(raw, dir)
		if err != nil {
			if !errors.Is(err, ErrSnapshot) {
				t.Fatalf("%v is not ErrSnapshot", err)
			}
			return
		}
		for _, r := range b.Repos {
			if _, err := r.Snapshot.index(); err != nil {
				return // entries are checked when first read
			}
		}
		if _, _, err := b.encodeSplit(); err != nil {
			t.Fatalf("encode of a decoded base: %v", err)
		}
	})
}
