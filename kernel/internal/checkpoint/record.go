package checkpoint

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"
	"unicode/utf8"
)

// State is one path's state in the folder.
type State struct {
	Type   string    `json:"type"`             // "file", "dir", "link", "none"
	Mode   uint32    `json:"mode,omitempty"`   // permission bits (07777)
	MTime  time.Time `json:"mtime,omitzero"`   // modification time
	Blob   string    `json:"blob,omitempty"`   // git blob id in store.git of a file's content
	Target string    `json:"target,omitempty"` // a link's target
	Hash   string    `json:"hash,omitempty"`   // hex sha256 of the content
}

// Item is what a commit did to one path: its state before and after.
// Path is slash-separated and relative to the folder.
type Item struct {
	Path   string `json:"path"`
	Before State  `json:"before"`
	After  State  `json:"after"`
}

// Record is one checkpoint: what one commit replaced.
type Record struct {
	ID     int       `json:"id"`
	Time   time.Time `json:"time"`
	Commit string    `json:"commit"`
	Items  []Item    `json:"items"`
	Undone bool      `json:"undone,omitempty"`
}

// Path names and link targets are bytes on Linux, and JSON strings must be
// UTF-8 (encoding/json would replace the other bytes with U+FFFD). So a name
// that is not valid UTF-8 is written as base64 under a "_b64" key instead.

type stateWire struct {
	Type      string    `json:"type"`
	Mode      uint32    `json:"mode,omitempty"`
	MTime     time.Time `json:"mtime,omitzero"`
	Blob      string    `json:"blob,omitempty"`
	Target    string    `json:"target,omitempty"`
	TargetB64 string    `json:"target_b64,omitempty"`
	Hash      string    `json:"hash,omitempty"`
}

// MarshalJSON writes a target that is not UTF-8 as target_b64.
func (s State) MarshalJSON() ([]byte, error) {
	w := stateWire{Type: s.Type, Mode: s.Mode, MTime: s.MTime, Blob: s.Blob, Hash: s.Hash}
	if utf8.ValidString(s.Target) {
		w.Target = s.Target
	} else {
		w.TargetB64 = base64.StdEncoding.EncodeToString([]byte(s.Target))
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads target or target_b64.
func (s *State) UnmarshalJSON(b []byte) error {
	var w stateWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*s = State{Type: w.Type, Mode: w.Mode, MTime: w.MTime, Blob: w.Blob, Target: w.Target, Hash: w.Hash}
	if w.TargetB64 != "" {
		if w.Target != "" {
			return fmt.Errorf("both target and target_b64")
		}
		t, err := base64.StdEncoding.DecodeString(w.TargetB64)
		if err != nil {
			return fmt.Errorf("target_b64: %w", err)
		}
		s.Target = string(t)
	}
	return nil
}

type itemWire struct {
	Path    string `json:"path,omitempty"`
	PathB64 string `json:"path_b64,omitempty"`
	Before  State  `json:"before"`
	After   State  `json:"after"`
}

// MarshalJSON writes a path that is not UTF-8 as path_b64.
func (it Item) MarshalJSON() ([]byte, error) {
	w := itemWire{Before: it.Before, After: it.After}
	if utf8.ValidString(it.Path) {
		w.Path = it.Path
	} else {
		w.PathB64 = base64.StdEncoding.EncodeToString([]byte(it.Path))
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads path or path_b64.
func (it *Item) UnmarshalJSON(b []byte) error {
	var w itemWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*it = Item{Path: w.Path, Before: w.Before, After: w.After}
	if w.PathB64 != "" {
		if w.Path != "" {
			return fmt.Errorf("both path and path_b64")
		}
		p, err := base64.StdEncoding.DecodeString(w.PathB64)
		if err != nil {
			return fmt.Errorf("path_b64: %w", err)
		}
		it.Path = string(p)
	}
	return nil
}

// maxRecord bounds a record file, so a damaged one cannot exhaust memory.
const maxRecord = 256 << 20

// DecodeRecord parses and checks a record file's bytes. Every path must be
// relative, clean and stay inside the folder, so that undo can never be made
// to write outside it by an edited record.
func DecodeRecord(b []byte) (*Record, error) {
	if len(b) > maxRecord {
		return nil, fmt.Errorf("%d bytes is more than %d", len(b), maxRecord)
	}
	var r Record
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&r); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("data after the record")
	}
	if err := r.check(); err != nil {
		return nil, err
	}
	return &r, nil
}

func (r *Record) check() error {
	if r.ID < 1 {
		return fmt.Errorf("id %d is not positive", r.ID)
	}
	seen := make(map[string]bool, len(r.Items))
	for i, it := range r.Items {
		if err := checkPath(it.Path); err != nil {
			return fmt.Errorf("item %d: %w", i+1, err)
		}
		if seen[it.Path] {
			return fmt.Errorf("item %d: path %q appears twice", i+1, it.Path)
		}
		seen[it.Path] = true
		if err := it.Before.check(true); err != nil {
			return fmt.Errorf("item %d (%q): before: %w", i+1, it.Path, err)
		}
		if err := it.After.check(false); err != nil {
			return fmt.Errorf("item %d (%q): after: %w", i+1, it.Path, err)
		}
	}
	return nil
}

func checkPath(p string) error {
	switch {
	case p == "" || p == ".":
		return fmt.Errorf("empty path")
	case strings.ContainsRune(p, 0):
		return fmt.Errorf("path %q holds a NUL byte", p)
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("path %q is absolute", p)
	case path.Clean(p) != p:
		return fmt.Errorf("path %q is not clean", p)
	case p == ".." || strings.HasPrefix(p, "../"):
		return fmt.Errorf("path %q leaves the folder", p)
	}
	return nil
}

// check a state; before states of files must name a blob so undo can put
// the content back.
func (s State) check(before bool) error {
	if s.Mode&^0o7777 != 0 {
		return fmt.Errorf("mode %o has bits beyond the permission bits", s.Mode)
	}
	if s.Blob != "" && !isHex(s.Blob, 20) {
		return fmt.Errorf("blob %q is not a git object id", s.Blob)
	}
	if s.Hash != "" && !isHex(s.Hash, 32) {
		return fmt.Errorf("hash %q is not a hex sha256", s.Hash)
	}
	switch s.Type {
	case "none":
		if s != (State{Type: "none"}) {
			return fmt.Errorf("type none with other fields set")
		}
	case "dir":
		if s.Blob != "" || s.Hash != "" || s.Target != "" {
			return fmt.Errorf("type dir with blob, hash or target")
		}
	case "link":
		if s.Target == "" || s.Blob != "" || s.Hash != "" {
			return fmt.Errorf("type link needs a target and no blob or hash")
		}
		if strings.ContainsRune(s.Target, 0) {
			return fmt.Errorf("link target holds a NUL byte")
		}
	case "file":
		if s.Target != "" {
			return fmt.Errorf("type file with a link target")
		}
		if s.Hash == "" {
			return fmt.Errorf("type file without a hash")
		}
		if before && s.Blob == "" {
			return fmt.Errorf("type file without a blob")
		}
	default:
		return fmt.Errorf("unknown type %q", s.Type)
	}
	return nil
}

func isHex(s string, n int) bool {
	if len(s) != 2*n || strings.ToLower(s) != s {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

func marshalRecord(r *Record) ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
