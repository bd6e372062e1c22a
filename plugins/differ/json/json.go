// Package json is the built-in differ for JSON (and JSON with comments, as
// in tsconfig.json): it names every key by its path (`key server.port`),
// array elements by index (`key servers[0]`) or, when the element is an
// object with an "id" or "name", by that (`key servers[name=web]`).
// Lockfiles such as package-lock.json are not read by entity.
package json

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/kulehq/kule/plugins/differ/internal/naming"
	"github.com/kulehq/kule/sdk/differ"
)

// Differ is the JSON differ.
type Differ struct{}

var (
	_ differ.Differ = Differ{}
	_ differ.Merger = Differ{}
)

// New returns the JSON differ; it is also a differ.Merger.
func New() differ.Differ { return Differ{} }

// Name is "json".
func (Differ) Name() string { return "json" }

// Accepts reads .json, .jsonc and .geojson files, but no lockfiles.
func (Differ) Accepts(path string) bool {
	return naming.HasExt(path, ".json", ".jsonc", ".geojson", ".webmanifest")
}

// maxDepth bounds nesting; deeper values are named as a whole.
const maxDepth = 200

// maxSize is the largest file the differ names.
const maxSize = 8 << 20

// errSyntax stops the scan at the first error; what was named stays.
var errSyntax = errors.New("json: syntax error")

// Entities names the entities of req.Content (see entities).
func (Differ) Entities(ctx context.Context, req differ.EntitiesRequest) (differ.EntitiesResponse, error) {
	es, err := entities(ctx, req.Content)
	return differ.EntitiesResponse{Entities: es}, err
}

// entities names the keys of src. A file with a syntax error yields the keys
// completed before the error.
func entities(ctx context.Context, src []byte) ([]differ.Entity, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("json differ: %w", err)
	}
	if len(src) > maxSize {
		return nil, nil
	}
	s := &scanner{src: src}
	s.ws()
	_ = s.value("", "", 0)
	// After a syntax error, the keys still open (the error's ancestors) end
	// where the error is: they hold what was named inside them.
	stop := min(s.pos, len(src))
	out := s.l.Ents[:0]
	for _, e := range s.l.Ents {
		if e.End == e.Start {
			e.End = stop
		}
		if e.End > e.Start {
			out = append(out, e)
		}
	}
	return out, nil
}

// Merge merges key by key with differ.MergeEntities.
func (d Differ) Merge(ctx context.Context, req differ.MergeRequest) (differ.MergeResponse, error) {
	return differ.MergeEntities(ctx, differ.EntitiesOf(d, req.Path), req)
}

type scanner struct {
	src []byte
	pos int
	l   naming.List
}

// ws skips white space and // and /* */ comments.
func (s *scanner) ws() {
	for s.pos < len(s.src) {
		switch c := s.src[s.pos]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			s.pos++
		case c == '/' && s.pos+1 < len(s.src) && s.src[s.pos+1] == '/':
			for s.pos < len(s.src) && s.src[s.pos] != '\n' {
				s.pos++
			}
		case c == '/' && s.pos+1 < len(s.src) && s.src[s.pos+1] == '*':
			end := strings.Index(string(s.src[s.pos+2:]), "*/")
			if end < 0 {
				s.pos = len(s.src)
				return
			}
			s.pos += end + 4
		default:
			return
		}
	}
}

// value scans one value at s.pos; path is its key path, parent the name of
// the entity that holds it.
func (s *scanner) value(path, parent string, depth int) error {
	if s.pos >= len(s.src) {
		return errSyntax
	}
	switch s.src[s.pos] {
	case '{':
		if depth >= maxDepth {
			return s.skip()
		}
		return s.object(path, parent, depth)
	case '[':
		if depth >= maxDepth {
			return s.skip()
		}
		return s.array(path, parent, depth)
	case '"':
		_, err := s.str()
		return err
	default:
		start := s.pos
		for s.pos < len(s.src) && !strings.ContainsRune(",}] \t\r\n/", rune(s.src[s.pos])) {
			s.pos++
		}
		if s.pos == start {
			return errSyntax
		}
		return nil
	}
}

// str scans a string and returns its decoded text.
func (s *scanner) str() (string, error) {
	start := s.pos
	s.pos++
	escaped := false
	for s.pos < len(s.src) {
		switch s.src[s.pos] {
		case '\\':
			s.pos += 2
			escaped = true
		case '"':
			s.pos++
			if !escaped {
				return string(s.src[start+1 : s.pos-1]), nil
			}
			var out string
			if err := json.Unmarshal(s.src[start:s.pos], &out); err != nil {
				return string(s.src[start+1 : s.pos-1]), nil
			}
			return out, nil
		case '\n':
			return "", errSyntax
		default:
			s.pos++
		}
	}
	return "", errSyntax
}

func (s *scanner) object(path, parent string, depth int) error {
	s.pos++ // {
	for {
		s.ws()
		if s.pos >= len(s.src) {
			return errSyntax
		}
		if s.src[s.pos] == '}' {
			s.pos++
			return nil
		}
		if s.src[s.pos] != '"' {
			return errSyntax
		}
		start := s.pos
		key, err := s.str()
		if err != nil {
			return err
		}
		s.ws()
		if s.pos >= len(s.src) || s.src[s.pos] != ':' {
			return errSyntax
		}
		s.pos++
		s.ws()
		name := join(path, key)
		i := s.l.Add("key", name, start, start, parent)
		if err := s.value(name, s.l.Ents[i].Name, depth+1); err != nil {
			return err
		}
		s.l.Ents[i].End = s.pos
		s.ws()
		if s.pos < len(s.src) && s.src[s.pos] == ',' {
			s.pos++
		}
	}
}

func (s *scanner) array(path, parent string, depth int) error {
	s.pos++ // [
	for n := 0; ; n++ {
		s.ws()
		if s.pos >= len(s.src) {
			return errSyntax
		}
		if s.src[s.pos] == ']' {
			s.pos++
			return nil
		}
		start := s.pos
		name := fmt.Sprintf("%s[%d]", path, n)
		if s.src[s.pos] == '{' {
			if err := s.skip(); err == nil {
				if k := idOf(s.src[start:s.pos]); k != "" {
					name = path + "[" + k + "]"
				}
			}
			s.pos = start
		}
		i := s.l.Add("key", name, start, start, parent)
		if err := s.value(name, s.l.Ents[i].Name, depth+1); err != nil {
			return err
		}
		s.l.Ents[i].End = s.pos
		s.ws()
		if s.pos < len(s.src) && s.src[s.pos] == ',' {
			s.pos++
		}
	}
}

// skip scans a too-deep value by brackets alone.
func (s *scanner) skip() error {
	depth := 0
	for s.pos < len(s.src) {
		switch s.src[s.pos] {
		case '"':
			if _, err := s.str(); err != nil {
				return err
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				s.pos++
				return nil
			}
		}
		s.pos++
	}
	return errSyntax
}

// idOf returns "id=web" when the value at the start of b is an object with
// a string or number "id" (or else "name") member.
func idOf(b []byte) string {
	if len(b) == 0 || b[0] != '{' {
		return ""
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return ""
	}
	for _, k := range []string{"id", "name"} {
		raw, ok := obj[k]
		if !ok {
			continue
		}
		var v any
		d := json.NewDecoder(strings.NewReader(string(raw)))
		d.UseNumber()
		if d.Decode(&v) != nil {
			continue
		}
		switch v := v.(type) {
		case string:
			return k + "=" + v
		case json.Number:
			return k + "=" + v.String()
		}
	}
	return ""
}

// join adds a key to a path; a key that would read as a path is quoted.
func join(path, key string) string {
	if key == "" || strings.ContainsAny(key, ".[] ") {
		key = strconv.Quote(key)
		if path == "" {
			return "[" + key + "]"
		}
		return path + "[" + key + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}
