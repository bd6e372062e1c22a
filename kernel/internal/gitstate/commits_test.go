package gitstate

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// The object decoders read what go-git's object package reads (the
// binary does not link that package: it carries OpenPGP). These targets
// hold them to it on any input: the same objects are accepted, with the
// same fields.

func memObject(t plumbing.ObjectType, b []byte) plumbing.EncodedObject {
	o := &plumbing.MemoryObject{}
	o.SetType(t)
	o.Write(b)
	return o
}

const (
	idA = "8b5ec1d000000000000000000000000000000001"
	idB = "ad08c52000000000000000000000000000000002"
)

func FuzzDecodeCommit(f *testing.F) {
	f.Add([]byte("tree " + idA + "\nparent " + idB + "\nauthor Ada <a@x> 1700000000 +0100\ncommitter Bo <b@x> 1700000001 -0200\n\nmsg\n"))
	f.Add([]byte("tree " + idA + "\nauthor A <a> 1 +0000\ngpgsig -----BEGIN\n line\ncommitter C <c> 5 +0000\n\n"))
	f.Add([]byte("tree " + idA + "\nparent " + idB + "\nparent " + idA + "\ncommitter C <c> -5 +0000"))
	f.Add([]byte("parent " + idB + "\ntree " + idA + "\n"))
	f.Add([]byte("tree " + idA))
	f.Add([]byte("\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var want object.Commit
		werr := want.Decode(memObject(plumbing.CommitObject, b))
		got, err := decodeCommit(bytes.NewReader(b))
		if (err != nil) != (werr != nil) {
			t.Fatalf("decodeCommit error %v, go-git's %v", err, werr)
		}
		if err != nil {
			return
		}
		if got.Tree != want.TreeHash || !slices.Equal(got.Parents, want.ParentHashes) || !got.When.Equal(want.Committer.When) {
			t.Fatalf("decodeCommit = tree %s parents %v time %v; go-git's tree %s parents %v time %v",
				got.Tree, got.Parents, got.When, want.TreeHash, want.ParentHashes, want.Committer.When)
		}
	})
}

func FuzzDecodeTagTarget(f *testing.F) {
	f.Add([]byte("object " + idA + "\ntype commit\ntag v1\ntagger T <t> 1 +0000\n\nmsg\n"))
	f.Add([]byte("object " + idA + "\ntype commit"))
	f.Add([]byte("object " + idA))
	f.Add([]byte("object " + idA + "\ntype blob\n"))
	f.Add([]byte("type commit\nobject " + idA + "\n"))
	f.Add([]byte("object " + idA + "\ntype nope\ntag v\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var want object.Tag
		werr := want.Decode(memObject(plumbing.TagObject, b))
		got, err := decodeTagTarget(bytes.NewReader(b))
		if (err != nil) != (werr != nil) {
			t.Fatalf("decodeTagTarget error %v, go-git's %v", err, werr)
		}
		if err == nil && got != want.Target {
			t.Fatalf("decodeTagTarget = %s, go-git's %s", got, want.Target)
		}
	})
}

func FuzzDecodeTree(f *testing.F) {
	var seed []byte
	for _, e := range []struct{ mode, name string }{{"100644", "a"}, {"40000", "d"}, {"120000", "l"}, {"160000", "s"}, {"100755", "x"}, {"100664", "old"}, {"777", "odd"}} {
		seed = append(seed, e.mode+" "+e.name+"\x00"...)
		seed = append(seed, bytes.Repeat([]byte{7}, 20)...)
	}
	f.Add(seed)
	f.Add([]byte("100644 a\x00short"))
	f.Add([]byte("100644 \x00" + string(bytes.Repeat([]byte{1}, 20))))
	f.Add([]byte("x9 a\x00" + string(bytes.Repeat([]byte{1}, 20))))
	f.Add([]byte("100644"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var want object.Tree
		werr := want.Decode(memObject(plumbing.TreeObject, b))
		got, err := decodeTree(bytes.NewReader(b))
		if (err != nil) != (werr != nil) {
			t.Fatalf("decodeTree error %v, go-git's %v", err, werr)
		}
		if err != nil {
			return
		}
		if len(got) != len(want.Entries) {
			t.Fatalf("decodeTree: %d entries, go-git's %d", len(got), len(want.Entries))
		}
		for i, e := range want.Entries {
			if g := got[i]; g.Name != e.Name || g.Mode != e.Mode || g.Hash != e.Hash {
				t.Fatalf("entry %d = %+v, go-git's %+v", i, g, e)
			}
		}
	})
}

func TestDecodersRefuseMalformed(t *testing.T) {
	for name, tc := range map[string]struct {
		decode func([]byte) error
		in     string
		want   error
	}{
		"commit without tree": {func(b []byte) error { _, err := decodeCommit(bytes.NewReader(b)); return err }, "parent " + idA + "\n", errMalformedCommit},
		"commit empty":        {func(b []byte) error { _, err := decodeCommit(bytes.NewReader(b)); return err }, "", errMalformedCommit},
		"commit bad parent":   {func(b []byte) error { _, err := decodeCommit(bytes.NewReader(b)); return err }, "tree " + idA + "\nparent xyz\n", errMalformedCommit},
		"tag without object":  {func(b []byte) error { _, err := decodeTagTarget(bytes.NewReader(b)); return err }, "\n", errMalformedTag},
		"tag type misplaced":  {func(b []byte) error { _, err := decodeTagTarget(bytes.NewReader(b)); return err }, "object " + idA + "\ntag v\n", errMalformedTag},
		"tree truncated id":   {func(b []byte) error { _, err := decodeTree(bytes.NewReader(b)); return err }, "100644 a\x00abc", errMalformedTree},
		"tree empty name":     {func(b []byte) error { _, err := decodeTree(bytes.NewReader(b)); return err }, "100644 \x00" + idA[:20], errMalformedTree},
		"tree bad mode":       {func(b []byte) error { _, err := decodeTree(bytes.NewReader(b)); return err }, "1x0 a\x00" + idA[:20], errMalformedTree},
	} {
		t.Run(name, func(t *testing.T) {
			if err := tc.decode([]byte(tc.in)); !errors.Is(err, tc.want) {
				t.Fatalf("decode(%q) = %v, want %v", tc.in, err, tc.want)
			}
		})
	}
}
