package checkpoint

import (
	"errors"
	"strings"
	"testing"
)

// A record whose states could not be put back as they say is refused
// before anything is written, with the item and the field named.
func TestSaveRefusesStatesUndoCannotRestore(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	good := fileItem(t, s, "a", []byte("a"))
	none := State{Type: "none"}
	hash := good.Before.Hash
	for name, tc := range map[string]struct {
		item Item
		says string
	}{
		"empty path":          {Item{Path: "", Before: none, After: none}, "empty path"},
		"NUL in path":         {Item{Path: "a\x00b", Before: none, After: none}, "NUL"},
		"mode beyond 07777":   {Item{Path: "a", Before: good.Before, After: State{Type: "dir", Mode: 0o170755}}, "permission bits"},
		"blob not an id":      {Item{Path: "a", Before: State{Type: "file", Blob: "XYZ", Hash: hash}, After: none}, "not a git object id"},
		"hash not a sha256":   {Item{Path: "a", Before: State{Type: "file", Blob: good.Before.Blob, Hash: "abc"}, After: none}, "not a hex sha256"},
		"none with a mode":    {Item{Path: "a", Before: State{Type: "none", Mode: 0o644}, After: none}, "type none"},
		"dir with a blob":     {Item{Path: "a", Before: State{Type: "dir", Blob: good.Before.Blob}, After: none}, "type dir"},
		"link without target": {Item{Path: "a", Before: State{Type: "link"}, After: none}, "needs a target"},
		"link target NUL":     {Item{Path: "a", Before: State{Type: "link", Target: "x\x00"}, After: none}, "NUL"},
		"file with a target":  {Item{Path: "a", Before: State{Type: "file", Target: "x", Blob: good.Before.Blob, Hash: hash}, After: none}, "link target"},
		"file without hash":   {Item{Path: "a", Before: State{Type: "file", Blob: good.Before.Blob}, After: none}, "without a hash"},
	} {
		t.Run(name, func(t *testing.T) {
			r := &Record{Items: []Item{tc.item}}
			err := s.Save(r)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "item 1") {
				t.Fatalf("Save = %v, want ErrInvalid naming item 1 and saying %q", err, tc.says)
			}
		})
	}
	// An after state need not keep a blob: what the commit wrote is in the
	// folder, and undo checks it by its hash.
	ok := good
	ok.Path, ok.Before, ok.After = "b", State{Type: "none"}, State{Type: "file", Hash: hash}
	if err := s.Save(&Record{Items: []Item{ok}}); err != nil {
		t.Fatalf("Save of a file created by the commit: %v", err)
	}
	if err := s.Save(&Record{ID: -3, Items: []Item{good}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Save with id -3 = %v, want ErrInvalid", err)
	}
}
