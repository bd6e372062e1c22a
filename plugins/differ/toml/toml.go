// Package toml is the built-in differ for TOML: it names tables
// (`table server`), arrays of tables by index or by their "name"/"id" key
// (`table bin[name=kule]`, `table products[1]`) and every key by its path
// (`key server.port`), each with the comments right above it. Lockfiles
// such as Cargo.lock are not read by entity.
package toml

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/kulehq/kule/plugins/differ/internal/naming"
	"github.com/kulehq/kule/sdk/differ"
)

// Differ is the TOML differ.
type Differ struct{}

var (
	_ differ.Differ = Differ{}
	_ differ.Merger = Differ{}
)

// New returns the TOML differ; it is also a differ.Merger.
func New() differ.Differ { return Differ{} }

// Name is "toml".
func (Differ) Name() string { return "toml" }

// Accepts reads .toml files.
func (Differ) Accepts(path string) bool { return naming.HasExt(path, ".toml") }

// maxSize is the largest file the differ names; maxDepth bounds nesting of
// arrays and inline tables.
const (
	maxSize  = 8 << 20
	maxDepth = 200
)

var errSyntax = errors.New("toml: syntax error")

// Entities names the entities of req.Content (see entities).
func (Differ) Entities(ctx context.Context, req differ.EntitiesRequest) (differ.EntitiesResponse, error) {
	es, err := entities(ctx, req.Content)
	return differ.EntitiesResponse{Entities: es}, err
}

// entities names the tables and keys of src. A file with a syntax error
// yields what was complete before it.
func entities(ctx context.Context, src []byte) ([]differ.Entity, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("toml differ: %w", err)
	}
	if len(src) > maxSize {
		return nil, nil
	}
	s := &scanner{src: src, table: -1, arrays: map[string]int{}, elems: map[string]string{}}
	s.run()
	s.closeTable()
	return s.l.Ents, nil
}

// Merge merges table by table and key by key with differ.MergeEntities.
func (d Differ) Merge(ctx context.Context, req differ.MergeRequest) (differ.MergeResponse, error) {
	return differ.MergeEntities(ctx, differ.EntitiesOf(d, req.Path), req)
}

type scanner struct {
	src  []byte
	pos  int
	l    naming.List
	lead int // start of the comment lines right above, -1 if none

	table   int    // index of the open table entity, -1 at the root
	tname   string // its name
	lastEnd int    // end of the table's last content
	arrays  map[string]int
	elems   map[string]string // array-of-tables path → current element name
}

func (s *scanner) closeTable() {
	if s.table >= 0 {
		s.l.Ents[s.table].End = s.lastEnd
		s.table = -1
	}
}

func (s *scanner) run() {
	s.lead = -1
	for s.pos < len(s.src) {
		lineStart := s.pos
		s.blanks()
		if s.pos >= len(s.src) {
			return
		}
		switch c := s.src[s.pos]; {
		case c == '\n' || c == '\r':
			s.pos++
			s.lead = -1
		case c == '#':
			if s.lead < 0 {
				s.lead = lineStart
			}
			s.comment()
		case c == '[':
			start := lineStart
			if s.lead >= 0 {
				start = s.lead
			}
			s.lead = -1
			if err := s.header(start); err != nil {
				return
			}
		default:
			start := lineStart
			if s.lead >= 0 {
				start = s.lead
			}
			s.lead = -1
			if err := s.keyValue(start); err != nil {
				return
			}
		}
	}
}

func (s *scanner) blanks() {
	for s.pos < len(s.src) && (s.src[s.pos] == ' ' || s.src[s.pos] == '\t') {
		s.pos++
	}
}

func (s *scanner) comment() {
	for s.pos < len(s.src) && s.src[s.pos] != '\n' {
		s.pos++
	}
}

// lineEnd consumes blanks and a comment up to the newline; anything else is
// a syntax error. It returns where the content (with the comment) ends.
func (s *scanner) lineEnd() (int, error) {
	s.blanks()
	if s.pos < len(s.src) && s.src[s.pos] == '#' {
		s.comment()
	}
	end := s.pos
	if s.pos < len(s.src) && s.src[s.pos] == '\r' {
		s.pos++
	}
	if s.pos < len(s.src) {
		if s.src[s.pos] != '\n' {
			return 0, errSyntax
		}
		s.pos++
	}
	return end, nil
}

// key reads a dotted key: bare, "basic" or 'literal' parts.
func (s *scanner) key() ([]string, error) {
	var parts []string
	for {
		s.blanks()
		if s.pos >= len(s.src) {
			return nil, errSyntax
		}
		switch c := s.src[s.pos]; {
		case c == '"' || c == '\'':
			start := s.pos
			if err := s.str(); err != nil {
				return nil, err
			}
			raw := string(s.src[start:s.pos])
			if c == '"' {
				if u, err := strconv.Unquote(raw); err == nil {
					parts = append(parts, u)
					break
				}
			}
			parts = append(parts, raw[1:len(raw)-1])
		default:
			start := s.pos
			for s.pos < len(s.src) && isBare(s.src[s.pos]) {
				s.pos++
			}
			if s.pos == start {
				return nil, errSyntax
			}
			parts = append(parts, string(s.src[start:s.pos]))
		}
		s.blanks()
		if s.pos < len(s.src) && s.src[s.pos] == '.' {
			s.pos++
			continue
		}
		return parts, nil
	}
}

func isBare(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

var idLine = regexp.MustCompile(`^[ \t]*(name|id)[ \t]*=[ \t]*("([^"\\]*)"|'([^']*)'|([0-9]+))`)

func (s *scanner) header(start int) error {
	s.pos++ // [
	array := s.pos < len(s.src) && s.src[s.pos] == '['
	if array {
		s.pos++
	}
	parts, err := s.key()
	if err != nil {
		return err
	}
	for _, c := range []bool{true, array} {
		if !c {
			continue
		}
		if s.pos >= len(s.src) || s.src[s.pos] != ']' {
			return errSyntax
		}
		s.pos++
	}
	end, err := s.lineEnd()
	if err != nil {
		return err
	}
	s.closeTable()
	// Under an array of tables, paths go through its current element.
	name := ""
	for i, p := range parts {
		name = joinKey(name, p)
		if el, ok := s.elems[strings.Join(parts[:i+1], "\x00")]; ok && (i < len(parts)-1 || !array) {
			name = el
		}
	}
	if array {
		path := strings.Join(parts, "\x00")
		n := s.arrays[path]
		s.arrays[path] = n + 1
		el := fmt.Sprintf("%s[%d]", name, n)
		if id := s.idAhead(); id != "" {
			el = name + "[" + id + "]"
		}
		name = el
		s.elems[path] = el
		// Deeper arrays restart under the new element.
		for p := range s.elems {
			if strings.HasPrefix(p, path+"\x00") {
				delete(s.elems, p)
				delete(s.arrays, p)
			}
		}
	}
	s.table = s.l.Add("table", name, start, end, "")
	s.tname = s.l.Ents[s.table].Name
	s.lastEnd = end
	return nil
}

// idAhead finds a name = "..." or id = ... key among the next lines of an
// array-of-tables element, before the next header.
func (s *scanner) idAhead() string {
	rest := s.src[s.pos:]
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		line := rest
		if i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] == '[' {
			return ""
		}
		if m := idLine.FindSubmatch(line); m != nil {
			v := string(m[3]) + string(m[4]) + string(m[5])
			return string(m[1]) + "=" + v
		}
	}
	return ""
}

func (s *scanner) keyValue(start int) error {
	parts, err := s.key()
	if err != nil {
		return err
	}
	if s.pos >= len(s.src) || s.src[s.pos] != '=' {
		return errSyntax
	}
	s.pos++
	s.blanks()
	if err := s.value(0); err != nil {
		return err
	}
	end, err := s.lineEnd()
	if err != nil {
		return err
	}
	name := s.tname
	if s.table < 0 {
		name = ""
	}
	for _, p := range parts {
		name = joinKey(name, p)
	}
	parent := ""
	if s.table >= 0 {
		parent = s.tname
	}
	s.l.Add("key", name, start, end, parent)
	s.lastEnd = end
	return nil
}

// value skips one value.
func (s *scanner) value(depth int) error {
	if s.pos >= len(s.src) || depth > maxDepth {
		return errSyntax
	}
	switch s.src[s.pos] {
	case '"', '\'':
		return s.str()
	case '[':
		return s.seq(']', depth)
	case '{':
		return s.seq('}', depth)
	}
	start := s.pos
	for s.pos < len(s.src) && !strings.ContainsRune(" \t\r\n,]}#", rune(s.src[s.pos])) {
		s.pos++
	}
	// Dates with a time: "1979-05-27 07:32:00".
	if s.pos+1 < len(s.src) && s.src[s.pos] == ' ' && s.src[s.pos+1] >= '0' && s.src[s.pos+1] <= '9' && bytes.Count(s.src[start:s.pos], []byte("-")) == 2 {
		s.pos++
		for s.pos < len(s.src) && !strings.ContainsRune(" \t\r\n,]}#", rune(s.src[s.pos])) {
			s.pos++
		}
	}
	if s.pos == start {
		return errSyntax
	}
	return nil
}

// seq skips an array (close ']') or an inline table (close '}').
func (s *scanner) seq(closer byte, depth int) error {
	s.pos++
	for {
		// white space, newlines and comments
		for s.pos < len(s.src) {
			c := s.src[s.pos]
			if c == '#' {
				s.comment()
				continue
			}
			if c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != ',' {
				break
			}
			s.pos++
		}
		if s.pos >= len(s.src) {
			return errSyntax
		}
		if s.src[s.pos] == closer {
			s.pos++
			return nil
		}
		if closer == '}' {
			if _, err := s.key(); err != nil {
				return err
			}
			if s.pos >= len(s.src) || s.src[s.pos] != '=' {
				return errSyntax
			}
			s.pos++
			s.blanks()
		}
		before := s.pos
		if err := s.value(depth + 1); err != nil {
			return err
		}
		if s.pos == before {
			return errSyntax
		}
	}
}

// str skips a basic, literal or multi-line string.
func (s *scanner) str() error {
	q := s.src[s.pos]
	if bytes.HasPrefix(s.src[s.pos:], []byte{q, q, q}) {
		s.pos += 3
		for s.pos < len(s.src) {
			if q == '"' && s.src[s.pos] == '\\' {
				s.pos += 2
				continue
			}
			if bytes.HasPrefix(s.src[s.pos:], []byte{q, q, q}) {
				s.pos += 3
				for s.pos < len(s.src) && s.src[s.pos] == q { // up to two quotes inside the closer
					s.pos++
				}
				return nil
			}
			s.pos++
		}
		return errSyntax
	}
	s.pos++
	for s.pos < len(s.src) {
		switch c := s.src[s.pos]; {
		case c == '\\' && q == '"':
			s.pos += 2
		case c == q:
			s.pos++
			return nil
		case c == '\n':
			return errSyntax
		default:
			s.pos++
		}
	}
	return errSyntax
}

// joinKey adds a key to a path, quoting a key that would not read back.
func joinKey(path, key string) string {
	if key == "" || strings.ContainsAny(key, ".[] \"'=") {
		key = strconv.Quote(key)
	}
	if path == "" {
		return key
	}
	return path + "." + key
}
