// Package text is the built-in differ for plain text (*.txt): it names each
// paragraph (lines up to a blank line) by its first line, so a review says
// which paragraphs of a note changed.
package text

import (
	"context"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/kulehq/kule/sdk/differ"
)

// maxName is how many runes of a paragraph's first line name it.
const maxName = 60

// Differ names the paragraphs of plain-text files.
type Differ struct{}

var _ differ.Differ = Differ{}

// New returns the text differ.
func New() differ.Differ { return Differ{} }

// Name is "text".
func (Differ) Name() string { return "text" }

// Accepts reads *.txt files.
func (Differ) Accepts(p string) bool { return strings.EqualFold(path.Ext(p), ".txt") }

// Entities names the entities of req.Content (see entities).
func (Differ) Entities(ctx context.Context, req differ.EntitiesRequest) (differ.EntitiesResponse, error) {
	es, err := entities(ctx, req.Content)
	return differ.EntitiesResponse{Entities: es}, err
}

// entities returns one "paragraph" entity per run of non-blank lines, named
// by its first line (made unique with " (2)", " (3)" when lines repeat).
func entities(ctx context.Context, src []byte) ([]differ.Entity, error) {
	var out []differ.Entity
	seen := map[string]int{}
	start := -1 // start of the current paragraph, -1 outside one
	end := 0
	flush := func() {
		if start < 0 {
			return
		}
		first := string(src[start:end])
		if i := strings.IndexByte(first, '\n'); i >= 0 {
			first = first[:i]
		}
		name := nameOf(first)
		seen[name]++
		if n := seen[name]; n > 1 {
			name = fmt.Sprintf("%s (%d)", name, n)
		}
		out = append(out, differ.Entity{Kind: "paragraph", Name: name, Start: start, End: end})
		start = -1
	}
	for off := 0; off < len(src); {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		nl := strings.IndexByte(string(src[off:]), '\n')
		lineEnd := len(src)
		if nl >= 0 {
			lineEnd = off + nl + 1
		}
		if strings.TrimSpace(string(src[off:lineEnd])) == "" {
			flush()
		} else {
			if start < 0 {
				start = off
			}
			end = lineEnd
		}
		off = lineEnd
	}
	flush()
	return out, nil
}

// nameOf makes a readable, valid UTF-8 name of a paragraph's first line.
func nameOf(line string) string {
	line = strings.ToValidUTF8(strings.TrimSpace(line), "\uFFFD")
	if utf8.RuneCountInString(line) > maxName {
		r := []rune(line)
		line = string(r[:maxName]) + "…"
	}
	return line
}
