// Package markdown is the built-in previewer for Markdown: goldmark parses
// the file (CommonMark with GitHub's tables, strikethrough and task lists),
// and its tree becomes headings, paragraphs, list items, code and table
// rows. No HTML is ever produced: raw HTML in the file is shown as the text
// it is (inert), links are shown and never followed, and pictures are named
// by their alt text and address, never fetched.
package markdown

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	gtext "github.com/yuin/goldmark/text"

	"github.com/kulehq/kule/plugins/previewer/names"
	"github.com/kulehq/kule/plugins/previewer/text"
	"github.com/kulehq/kule/sdk/previewer"
)

// maxDepth is how deep nested lists and quotes are laid out; deeper content
// is shown at this depth.
const maxDepth = 32

// Previewer lays out Markdown.
type Previewer struct{}

var _ previewer.Previewer = Previewer{}

// New returns the Markdown previewer.
func New() previewer.Previewer { return Previewer{} }

// Name is "markdown".
func (Previewer) Name() string { return "markdown" }

// Accepts *.md, *.markdown, *.mdown and *.mkd (names.Markdown).
func (Previewer) Accepts(p string) bool { return names.Markdown(p) }

var md = goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.TaskList))

// Preview lays out req.Content.
func (Previewer) Preview(_ context.Context, req previewer.Request) (previewer.Response, error) {
	src, notes, err := text.Decode(req.Content)
	if err != nil {
		return previewer.Response{}, err
	}
	b, flattened := flattenQuotes([]byte(src))
	if flattened {
		notes = append(notes, fmt.Sprintf("quotes nested deeper than %d are shown at that depth", maxDepth))
	}
	doc := md.Parser().Parse(gtext.NewReader(b))
	w := &walker{src: b, limit: req.Limit()}
	w.blocks(doc, 0, "")
	return previewer.Response{Kind: previewer.KindMarkdown, Language: "markdown", Blocks: w.out, Truncated: w.truncated, Notes: notes}, nil
}

// flattenQuotes drops the '>' markers beyond maxDepth at the start of each
// line: the parser's time grows with the square of a quote's depth, so a
// file of a few kilobytes of '>' would otherwise hold it for minutes.
func flattenQuotes(src []byte) ([]byte, bool) {
	if bytes.Count(src, []byte(">")) <= maxDepth {
		return src, false
	}
	var out []byte
	changed := false
	for len(src) > 0 {
		line := src
		if i := bytes.IndexByte(src, '\n'); i >= 0 {
			line, src = src[:i+1], src[i+1:]
		} else {
			src = nil
		}
		depth, end := 0, 0
		for end < len(line) && (line[end] == '>' || line[end] == ' ' || line[end] == '\t') {
			if line[end] == '>' {
				depth++
			}
			end++
		}
		if depth <= maxDepth {
			out = append(out, line...)
			continue
		}
		changed = true
		out = append(out, bytes.Repeat([]byte("> "), maxDepth)...)
		out = append(out, line[end:]...)
	}
	return out, changed
}

type walker struct {
	src       []byte
	out       []previewer.Block
	limit     int
	truncated bool
	paras     int
	tables    int
}

func (w *walker) add(b previewer.Block) bool {
	if len(w.out) >= w.limit {
		w.truncated = true
		return false
	}
	w.out = append(w.out, b)
	return true
}

// blocks lays out the block children of n at list depth level; marker is
// the list marker the first paragraph carries.
func (w *walker) blocks(n ast.Node, level int, marker string) {
	for c := n.FirstChild(); c != nil && !w.truncated; c = c.NextSibling() {
		switch x := c.(type) {
		case *ast.Heading:
			w.add(previewer.Block{Heading: &previewer.Heading{Level: min(max(x.Level, 1), 6), Text: plain(w.runs(x))}})
		case *ast.Paragraph, *ast.TextBlock:
			w.paras++
			w.add(previewer.Block{Paragraph: &previewer.Paragraph{Runs: w.runs(x), Number: w.paras, Marker: marker, Level: level}})
			marker = ""
		case *ast.List:
			n := x.Start
			for item := x.FirstChild(); item != nil && !w.truncated; item = item.NextSibling() {
				m := "•"
				if x.IsOrdered() {
					m = strconv.Itoa(n) + string(x.Marker)
					n++
				}
				if marker != "" { // a list right inside a list item: its marker stays
					m = marker + " " + m
					marker = ""
				}
				w.blocks(item, min(level+1, maxDepth), m)
			}
		case *ast.Blockquote:
			w.blocks(x, min(level+1, maxDepth), "›")
		case *ast.FencedCodeBlock:
			w.add(previewer.Block{Code: &previewer.Code{Language: string(x.Language(w.src)), Text: w.lines(x)}})
		case *ast.CodeBlock:
			w.add(previewer.Block{Code: &previewer.Code{Text: w.lines(x)}})
		case *ast.HTMLBlock:
			// Shown as the text it is: the app draws text, never markup.
			var buf bytes.Buffer
			buf.WriteString(w.lines(x))
			if x.HasClosure() {
				buf.Write(x.ClosureLine.Value(w.src))
			}
			w.add(previewer.Block{Code: &previewer.Code{Language: "html", Text: buf.String()}})
		case *ast.ThematicBreak:
			w.paras++
			w.add(previewer.Block{Paragraph: &previewer.Paragraph{Runs: []previewer.Run{{Text: "―――"}}, Number: w.paras}})
		case *east.Table:
			w.table(x)
		default:
			w.blocks(c, level, marker)
		}
	}
}

func (w *walker) table(t *east.Table) {
	w.tables++
	row := 0
	for r := t.FirstChild(); r != nil && !w.truncated; r = r.NextSibling() {
		row++
		var cells []string
		for c := r.FirstChild(); c != nil; c = c.NextSibling() {
			if len(cells) < previewer.MaxCells {
				cells = append(cells, plain(w.runs(c)))
			}
		}
		w.add(previewer.Block{Row: &previewer.Row{Table: w.tables, Number: row, Cells: cells}})
	}
}

func (w *walker) lines(n ast.Node) string {
	var buf bytes.Buffer
	l := n.Lines()
	for i := 0; i < l.Len(); i++ {
		seg := l.At(i)
		buf.Write(seg.Value(w.src))
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// runs flattens the inline children of n into runs of text.
func (w *walker) runs(n ast.Node) []previewer.Run {
	var rb runBuilder
	var walk func(n ast.Node, style previewer.Run, depth int)
	walk = func(n ast.Node, style previewer.Run, depth int) {
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			s := style
			switch x := c.(type) {
			case *ast.Text:
				rb.add(s, x.Segment.Value(w.src))
				if x.SoftLineBreak() || x.HardLineBreak() {
					rb.add(s, []byte(" "))
				}
				continue
			case *ast.String:
				rb.add(s, x.Value)
				continue
			case *ast.CodeSpan:
				s.Code = true
			case *ast.Emphasis:
				if x.Level >= 2 {
					s.Bold = true
				} else {
					s.Italic = true
				}
			case *ast.Link:
				s.Link = string(x.Destination)
			case *ast.AutoLink:
				s.Link = string(x.URL(w.src))
				rb.add(s, x.Label(w.src))
				continue
			case *ast.Image:
				s.Link = string(x.Destination)
				rb.add(s, []byte("[picture: "))
				walk(x, s, depth+1)
				rb.add(s, []byte("]"))
				continue
			case *ast.RawHTML:
				// Inert: the markup is shown as the characters it is.
				rb.add(s, x.Segments.Value(w.src))
				continue
			case *east.TaskCheckBox:
				mark := "☐ "
				if x.IsChecked {
					mark = "☑ "
				}
				rb.add(s, []byte(mark))
				continue
			}
			if depth < 64 {
				walk(c, s, depth+1)
			}
		}
	}
	walk(n, previewer.Run{}, 0)
	out := rb.done()
	if len(out) > 0 {
		last := &out[len(out)-1]
		last.Text = strings.TrimRight(last.Text, " ")
	}
	return out
}

// runBuilder joins text of the same style into one run, in linear time.
type runBuilder struct {
	out []previewer.Run
	cur previewer.Run
	buf bytes.Buffer
	has bool
}

func (b *runBuilder) add(s previewer.Run, t []byte) {
	if len(t) == 0 {
		return
	}
	if b.has && (b.cur.Bold != s.Bold || b.cur.Italic != s.Italic || b.cur.Code != s.Code || b.cur.Link != s.Link) {
		b.flush()
	}
	if !b.has {
		b.cur, b.has = s, true
	}
	b.buf.Write(t)
}

func (b *runBuilder) flush() {
	if b.has {
		b.cur.Text = b.buf.String()
		b.out = append(b.out, b.cur)
		b.buf.Reset()
		b.has = false
	}
}

func (b *runBuilder) done() []previewer.Run {
	b.flush()
	return b.out
}

func plain(rs []previewer.Run) string {
	return previewer.Paragraph{Runs: rs}.Text()
}
