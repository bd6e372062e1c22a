// Package markdown is the built-in differ for Markdown: it names sections by
// their heading path (`section Plan › Later`). ATX (`## Later`) and setext
// (underlined) headings count; lines inside fenced code blocks and YAML
// front matter do not. A section runs from its heading to the next heading
// of the same or a higher level, so it holds its subsections.
package markdown

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/kulehq/kule/plugins/differ/internal/naming"
	"github.com/kulehq/kule/sdk/differ"
)

// Differ is the Markdown differ.
type Differ struct{}

var (
	_ differ.Differ = Differ{}
	_ differ.Merger = Differ{}
)

// New returns the Markdown differ; it is also a differ.Merger.
func New() differ.Differ { return Differ{} }

// Name is "markdown".
func (Differ) Name() string { return "markdown" }

// Sep joins the titles of a heading path.
const Sep = " › "

// Accepts reads .md, .markdown, .mdx and .mdown files.
func (Differ) Accepts(path string) bool {
	return naming.HasExt(path, ".md", ".markdown", ".mdx", ".mdown", ".mkd")
}

type line struct {
	start, end int // end excludes the newline
	text       string
}

type heading struct {
	level int
	title string
	start int
}

// Entities names the entities of req.Content (see entities).
func (Differ) Entities(ctx context.Context, req differ.EntitiesRequest) (differ.EntitiesResponse, error) {
	es, err := entities(ctx, req.Content)
	return differ.EntitiesResponse{Entities: es}, err
}

// entities names the sections of src.
func entities(ctx context.Context, src []byte) ([]differ.Entity, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("markdown differ: %w", err)
	}
	var lines []line
	for pos := 0; pos < len(src); {
		i := bytes.IndexByte(src[pos:], '\n')
		end := len(src)
		next := len(src)
		if i >= 0 {
			end, next = pos+i, pos+i+1
		}
		lines = append(lines, line{pos, end, strings.TrimRight(string(src[pos:end]), "\r")})
		pos = next
	}
	var hs []heading
	first := 0
	if len(lines) > 0 && strings.TrimSpace(lines[0].text) == "---" {
		for j := 1; j < len(lines); j++ {
			if t := strings.TrimSpace(lines[j].text); t == "---" || t == "..." {
				first = j + 1
				break
			}
		}
	}
	fence, fenceLen := byte(0), 0
	para := -1 // first line of the current paragraph, -1 if none
	for i := first; i < len(lines); i++ {
		t := lines[i].text
		ind := indent(t)
		body := t[min(ind, len(t)):]
		if fence != 0 {
			if ind < 4 && run(body, fence) >= fenceLen && strings.TrimSpace(body[run(body, fence):]) == "" {
				fence = 0
			}
			continue
		}
		if ind < 4 && (run(body, '`') >= 3 || run(body, '~') >= 3) {
			c := body[0]
			// A backtick fence's info string has no backtick.
			if c == '~' || !strings.Contains(body[run(body, '`'):], "`") {
				fence, fenceLen, para = c, run(body, c), -1
				continue
			}
		}
		if strings.TrimSpace(t) == "" {
			para = -1
			continue
		}
		if ind < 4 && body[0] == '#' {
			if lvl := run(body, '#'); lvl <= 6 && (lvl == len(body) || body[lvl] == ' ' || body[lvl] == '\t') {
				hs = append(hs, heading{lvl, atxTitle(body[lvl:]), lines[i].start})
				para = -1
				continue
			}
		}
		if ind < 4 && para >= 0 && (body[0] == '=' || body[0] == '-') {
			c := body[0]
			if n := run(body, c); strings.TrimSpace(body[n:]) == "" {
				lvl := 1
				if c == '-' {
					lvl = 2
				}
				var parts []string
				for j := para; j < i; j++ {
					parts = append(parts, strings.TrimSpace(lines[j].text))
				}
				hs = append(hs, heading{lvl, strings.Join(parts, " "), lines[para].start})
				para = -1
				continue
			}
		}
		if para < 0 && ind < 4 && !startsBlock(body) {
			para = i
		} else if para < 0 {
			para = -2 // a list item, quote or code line: no setext heading under it
		}
	}
	var l naming.List
	type open struct {
		level int
		name  string
		idx   int
	}
	var stack []open
	for k, h := range hs {
		end := len(src)
		for _, n := range hs[k+1:] {
			if n.level <= h.level {
				end = n.start
				break
			}
		}
		// Blank lines after a section are glue between sections.
		for end > h.start {
			j := bytes.LastIndexByte(src[h.start:end-1], '\n')
			if j < 0 || strings.TrimSpace(string(src[h.start+j+1:end])) != "" {
				break
			}
			end = h.start + j + 1
		}
		for len(stack) > 0 && stack[len(stack)-1].level >= h.level {
			stack = stack[:len(stack)-1]
		}
		title := h.title
		if title == "" {
			title = "(untitled)"
		}
		name, parent := title, ""
		if len(stack) > 0 {
			parent = l.Ents[stack[len(stack)-1].idx].Name
			name = parent + Sep + title
		}
		idx := l.Add("section", name, h.start, end, parent)
		stack = append(stack, open{h.level, name, idx})
	}
	return l.Ents, nil
}

// Merge merges section by section with differ.MergeEntities.
func (d Differ) Merge(ctx context.Context, req differ.MergeRequest) (differ.MergeResponse, error) {
	return differ.MergeEntities(ctx, differ.EntitiesOf(d, req.Path), req)
}

func indent(s string) int {
	n := 0
	for _, c := range []byte(s) {
		switch c {
		case ' ':
			n++
		case '\t':
			n += 4 - n%4
		default:
			return n
		}
	}
	return n
}

// run counts the leading c in s.
func run(s string, c byte) int {
	n := 0
	for n < len(s) && s[n] == c {
		n++
	}
	return n
}

// atxTitle trims an ATX heading's text and its closing #s.
func atxTitle(s string) string {
	s = strings.TrimSpace(s)
	if t := strings.TrimRight(s, "#"); t != s && (t == "" || strings.HasSuffix(t, " ") || strings.HasSuffix(t, "\t")) {
		s = strings.TrimSpace(t)
	}
	return strings.Join(strings.Fields(s), " ")
}

// startsBlock says whether a line opens a list item, quote, table row or
// HTML block rather than a paragraph that a setext underline could make a
// heading.
func startsBlock(s string) bool {
	switch s[0] {
	case '>', '|', '<':
		return true
	case '-', '*', '+':
		return len(s) == 1 || s[1] == ' ' || s[1] == '\t'
	}
	i := 0
	for i < len(s) && i < 9 && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i > 0 && i < len(s) && (s[i] == '.' || s[i] == ')') && (i+1 == len(s) || s[i+1] == ' ')
}
