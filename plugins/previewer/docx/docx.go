// Package docx is the built-in previewer for Word documents: headings,
// paragraphs (numbered as Word counts them, so a place can be named
// "paragraph 14"), numbered and bulleted lists, and tables. The document is
// read in memory after ooxml has inflated each part through a cap and
// refused zip bombs and XML that declares entities; its XML is read with
// encoding/xml, which expands no entity and fetches nothing.
package docx

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/kulehq/kule/plugins/previewer/internal/ooxml"
	"github.com/kulehq/kule/plugins/previewer/names"
	"github.com/kulehq/kule/plugins/previewer/text"
	"github.com/kulehq/kule/sdk/previewer"
)

// Limits of a document shown.
const (
	MaxParagraph = 64 << 10
	MaxCell      = 4 << 10
	maxDepth     = 64
)

// Previewer shows Word documents.
type Previewer struct{}

var _ previewer.Previewer = Previewer{}

// New returns the Word previewer.
func New() previewer.Previewer { return Previewer{} }

// Name is "docx".
func (Previewer) Name() string { return "docx" }

// Accepts *.docx and *.docm (macros are never run: only text is read).
func (Previewer) Accepts(p string) bool { return names.Word(p) }

const wNS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"

// Preview lays out req.Content.
func (Previewer) Preview(ctx context.Context, req previewer.Request) (previewer.Response, error) {
	pkg, err := ooxml.Open(req.Content, "Word")
	if err != nil {
		return previewer.Response{}, err
	}
	doc, err := pkg.Part("word/document.xml")
	if errors.Is(err, ooxml.ErrNoPart) {
		return previewer.Response{}, ooxml.Refuse("not a Word document (no word/document.xml)")
	}
	if err != nil {
		return previewer.Response{}, err
	}
	nums := numberingOf(pkg)
	r := &reader{limit: req.Limit(), nums: nums, counters: map[string][]int{}}
	if err := r.read(ctx, doc); err != nil {
		return previewer.Response{}, err
	}
	return previewer.Response{Kind: previewer.KindDocument, Blocks: r.out, Truncated: r.truncated, Notes: r.notes}, nil
}

// numbering maps a list (numId) and level to its number format ("decimal",
// "bullet", "lowerLetter"...), from word/numbering.xml.
type numbering map[string]map[int]string

func numberingOf(pkg *ooxml.Package) numbering {
	data, err := pkg.Part("word/numbering.xml")
	if err != nil {
		return nil
	}
	abstract := map[string]map[int]string{}
	out := numbering{}
	dec := xml.NewDecoder(bytes.NewReader(data))
	var cur string
	lvl := -1
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch se.Name.Local {
		case "abstractNum":
			cur = attr(se, "abstractNumId")
			abstract[cur] = map[int]string{}
		case "lvl":
			lvl, _ = strconv.Atoi(attr(se, "ilvl"))
		case "numFmt":
			if m := abstract[cur]; m != nil && lvl >= 0 {
				m[lvl] = attr(se, "val")
			}
		case "num":
			cur = attr(se, "numId")
			out[cur] = nil
		case "abstractNumId":
			if _, ok := out[cur]; ok {
				out[cur] = abstract[attr(se, "val")]
			}
		}
	}
	return out
}

func attr(se xml.StartElement, local string) string {
	for _, a := range se.Attr {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

type reader struct {
	limit     int
	out       []previewer.Block
	truncated bool
	notes     []string
	nums      numbering
	counters  map[string][]int // per list, the running number of each level
	paras     int
}

func (r *reader) add(b previewer.Block) {
	if len(r.out) >= r.limit {
		r.truncated = true
		return
	}
	r.out = append(r.out, b)
}

// para is a paragraph being read.
type para struct {
	runs         []previewer.Run
	buf          strings.Builder // the text of the last run, not yet in runs
	style0       previewer.Run   // the last run's style
	open         bool            // buf holds a run
	size         int
	style        string
	numID        string
	ilvl         int
	bold, italic bool // of the run being read
	cut          bool
}

func (p *para) text(s string) {
	if s == "" {
		return
	}
	if p.size+len(s) > MaxParagraph {
		s = text.Cut(s, MaxParagraph-p.size)
		p.cut = true
	}
	p.size += len(s)
	s = strings.ToValidUTF8(s, "\uFFFD")
	if p.open && (p.style0.Bold != p.bold || p.style0.Italic != p.italic) {
		p.flush()
	}
	if !p.open {
		p.style0, p.open = previewer.Run{Bold: p.bold, Italic: p.italic}, true
	}
	p.buf.WriteString(s)
}

func (p *para) flush() {
	if p.open {
		r := p.style0
		r.Text = p.buf.String()
		p.runs = append(p.runs, r)
		p.buf.Reset()
		p.open = false
	}
}

func (p *para) plain() string {
	p.flush()
	return previewer.Paragraph{Runs: p.runs}.Text()
}

// read walks the document's body: paragraphs and tables in order.
func (r *reader) read(ctx context.Context, doc []byte) error {
	dec := xml.NewDecoder(bytes.NewReader(doc))
	dec.Strict = true
	var (
		p      *para
		inText bool
		table  int // the table being read (0: none); nested tables join their outer one
		tdepth int // how many tables the reader is inside
		depth  int
		row    []string
		rowN   int
		cell   strings.Builder
		tables int
	)
	for n := 0; ; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return ooxml.Refuse("word/document.xml is not valid XML (%v)", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			if depth > maxDepth*4 {
				return ooxml.Refuse("word/document.xml nests deeper than %d elements", maxDepth*4)
			}
			if t.Name.Space != wNS {
				continue
			}
			switch t.Name.Local {
			case "tbl":
				tdepth++
				if tdepth == 1 {
					tables++
					table, rowN = tables, 0
				}
			case "tr":
				if tdepth == 1 {
					row = nil
				}
			case "tc":
				if tdepth == 1 {
					cell.Reset()
				}
			case "p":
				p = &para{}
			case "pStyle":
				if p != nil {
					p.style = attr(t, "val")
				}
			case "numId":
				if p != nil {
					p.numID = attr(t, "val")
				}
			case "ilvl":
				if p != nil {
					p.ilvl, _ = strconv.Atoi(attr(t, "val"))
					p.ilvl = min(max(p.ilvl, 0), 8)
				}
			case "r":
				if p != nil {
					p.bold, p.italic = false, false
				}
			case "b":
				if p != nil && attr(t, "val") != "0" && attr(t, "val") != "false" {
					p.bold = true
				}
			case "i":
				if p != nil && attr(t, "val") != "0" && attr(t, "val") != "false" {
					p.italic = true
				}
			case "t":
				inText = true
			case "tab":
				if p != nil {
					p.text("\t")
				}
			case "br", "cr":
				if p != nil {
					p.text(" ")
				}
			}
		case xml.CharData:
			if inText && p != nil {
				p.text(string(t))
			}
		case xml.EndElement:
			depth--
			if t.Name.Space != wNS {
				continue
			}
			switch t.Name.Local {
			case "t":
				inText = false
			case "p":
				if p == nil {
					continue
				}
				if table != 0 {
					if cell.Len() > 0 {
						cell.WriteByte(' ')
					}
					if cell.Len() < MaxCell {
						cell.WriteString(p.plain())
					}
				} else {
					r.paragraph(p)
				}
				p = nil
			case "tc":
				if tdepth == 1 {
					row = append(row, text.Cut(strings.TrimSpace(cell.String()), MaxCell))
				}
			case "tr":
				if tdepth == 1 && len(row) <= previewer.MaxCells {
					rowN++
					r.add(previewer.Block{Row: &previewer.Row{Table: table, Number: rowN, Cells: row}})
				}
			case "tbl":
				if tdepth > 0 {
					tdepth--
				}
				if tdepth == 0 {
					table = 0
				}
			}
		}
		if r.truncated {
			break
		}
	}
	return nil
}

// paragraph adds a body paragraph as a heading, a list item or a paragraph.
func (r *reader) paragraph(p *para) {
	txt := strings.TrimSpace(p.plain())
	if txt == "" {
		return
	}
	r.paras++
	if p.cut {
		r.notes = appendOnce(r.notes, fmt.Sprintf("paragraphs longer than %d bytes are cut", MaxParagraph))
	}
	if lvl := headingLevel(p.style); lvl > 0 {
		r.add(previewer.Block{Heading: &previewer.Heading{Level: lvl, Text: txt}})
		return
	}
	b := &previewer.Paragraph{Runs: p.runs, Number: r.paras}
	if p.numID != "" && p.numID != "0" {
		b.Marker, b.Level = r.marker(p.numID, p.ilvl), p.ilvl+1
	}
	r.add(previewer.Block{Paragraph: b})
}

// marker is the next marker of list numID at level ilvl: "3." for a
// numbered level, "•" for a bullet.
func (r *reader) marker(numID string, ilvl int) string {
	c := r.counters[numID]
	for len(c) <= ilvl {
		c = append(c, 0)
	}
	c[ilvl]++
	for i := ilvl + 1; i < len(c); i++ {
		c[i] = 0
	}
	r.counters[numID] = c
	format := r.nums[numID][ilvl]
	n := c[ilvl]
	switch format {
	case "bullet", "none":
		return "•"
	case "lowerLetter":
		return string(rune('a'+(n-1)%26)) + "."
	case "upperLetter":
		return string(rune('A'+(n-1)%26)) + "."
	case "lowerRoman":
		return strings.ToLower(roman(n)) + "."
	case "upperRoman":
		return roman(n) + "."
	case "":
		if r.nums == nil {
			return "•"
		}
	}
	return strconv.Itoa(n) + "."
}

func roman(n int) string {
	if n <= 0 || n >= 4000 {
		return strconv.Itoa(n)
	}
	vals := []int{1000, 900, 500, 400, 100, 90, 50, 40, 10, 9, 5, 4, 1}
	syms := []string{"M", "CM", "D", "CD", "C", "XC", "L", "XL", "X", "IX", "V", "IV", "I"}
	var b strings.Builder
	for i, v := range vals {
		for n >= v {
			b.WriteString(syms[i])
			n -= v
		}
	}
	return b.String()
}

// headingLevel reads Word's built-in heading styles ("Heading1", "Title").
func headingLevel(style string) int {
	s := strings.ToLower(style)
	if s == "title" {
		return 1
	}
	if rest, ok := strings.CutPrefix(s, "heading"); ok {
		if n, err := strconv.Atoi(strings.TrimSpace(rest)); err == nil && n >= 1 {
			return min(n, 6)
		}
	}
	return 0
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
