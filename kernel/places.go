package kernel

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/kulehq/kule/kernel/internal/pluginhost"
	"github.com/kulehq/kule/kernel/internal/task"
	"github.com/kulehq/kule/sdk/previewer"
)

// Limits of "ask about a place".
const (
	// MaxPlaces is the most places one prompt names.
	MaxPlaces = 20
	// maxQuoted bounds what of a place is quoted to the agent.
	maxQuotedLines = 200
	maxQuotedBytes = 8 << 10
	maxQuotedCells = 200
	// MaxPictures is the most picture regions one prompt sends as images
	// (to an agent that takes them); later ones are named in text only.
	MaxPictures = 3
)

// ErrPlace: a place that cannot be read (a bad form, outside the file, or a
// file that cannot be previewed). Nothing was sent to the agent.
var ErrPlace = errors.New("place")

// PlaceKind is what a place points at.
type PlaceKind string

// Kinds of place.
const (
	PlaceFile      PlaceKind = "file"
	PlaceLines     PlaceKind = "lines"
	PlaceSection   PlaceKind = "section"
	PlaceCells     PlaceKind = "cells"
	PlaceRegion    PlaceKind = "region"
	PlaceParagraph PlaceKind = "paragraph"
)

// Place is a named place in a file of the task's copy: PATH[:PLACE], where
// PLACE is lines ("12" or "12-18"), a section ("#Plan › Later", or
// "#Plan/Later"), cells ("Sheet1!B2:D9", "B2"), a picture's region in
// pixels ("120,40-380,260") or a paragraph ("¶14" or "p14").
type Place struct {
	Path string    `json:"path"`
	Kind PlaceKind `json:"kind"`
	// From and To are lines (1-based, inclusive) or the paragraph (From).
	From int `json:"from,omitempty"`
	To   int `json:"to,omitempty"`
	// Section is the heading path, "Plan › Later".
	Section string `json:"section,omitempty"`
	// Sheet and the cell range, 1-based columns and rows, inclusive.
	Sheet          string `json:"sheet,omitempty"`
	Col1, Row1     int    `json:"-"`
	Col2, Row2     int    `json:"-"`
	X1, Y1, X2, Y2 int    `json:"-"`
	spec           string
}

// The forms of a place, compiled at first use (not at the start of every
// kule command).
var (
	linesRe  = lazy(`^([0-9]{1,9})(?:\s*[-–]\s*([0-9]{1,9}))?$`)
	cellsRe  = lazy(`^(?:(.{1,64})!)?\$?([A-Za-z]{1,3})\$?([0-9]{1,7})(?::\$?([A-Za-z]{1,3})\$?([0-9]{1,7}))?$`)
	regionRe = lazy(`^([0-9]{1,6}),([0-9]{1,6})\s*[-–]\s*([0-9]{1,6}),([0-9]{1,6})$`)
	paraRe   = lazy(`^(?:¶|[pP])\s*([0-9]{1,7})$`)
)

func lazy(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// ParsePlace reads PATH[:PLACE]. The place is split at the first ':' that
// is followed by a place's form, so a path may hold ':' of its own.
func ParsePlace(arg string) (Place, error) {
	if arg == "" || len(arg) > 4096 || !utf8.ValidString(arg) {
		return Place{}, fmt.Errorf("%w %q: want PATH or PATH:PLACE", ErrPlace, arg)
	}
	for i := 0; i < len(arg); i++ {
		if arg[i] != ':' {
			continue
		}
		if p, ok := placeOf(arg[:i], arg[i+1:]); ok {
			return p, checkPath(p)
		}
	}
	p := Place{Path: strings.Trim(arg, "/"), Kind: PlaceFile}
	return p, checkPath(p)
}

func checkPath(p Place) error {
	if err := CheckRelPath(p.Path); err != nil || p.Path == "" {
		return fmt.Errorf("%w %q: not a path inside the task's copy (give it as kule status shows it)", ErrPlace, p.Path)
	}
	return nil
}

func placeOf(path, spec string) (Place, bool) {
	p := Place{Path: strings.Trim(path, "/"), spec: spec}
	spec = strings.TrimSpace(spec)
	if m := linesRe().FindStringSubmatch(spec); m != nil {
		p.Kind = PlaceLines
		p.From, _ = strconv.Atoi(m[1])
		p.To = p.From
		if m[2] != "" {
			p.To, _ = strconv.Atoi(m[2])
		}
		return p, p.From >= 1 && p.To >= p.From
	}
	if m := regionRe().FindStringSubmatch(spec); m != nil {
		p.Kind = PlaceRegion
		p.X1, _ = strconv.Atoi(m[1])
		p.Y1, _ = strconv.Atoi(m[2])
		p.X2, _ = strconv.Atoi(m[3])
		p.Y2, _ = strconv.Atoi(m[4])
		return p, p.X2 > p.X1 && p.Y2 > p.Y1
	}
	if m := paraRe().FindStringSubmatch(spec); m != nil {
		p.Kind = PlaceParagraph
		p.From, _ = strconv.Atoi(m[1])
		return p, p.From >= 1
	}
	if s, ok := strings.CutPrefix(spec, "#"); ok {
		p.Kind = PlaceSection
		p.Section = sectionKey(s)
		return p, p.Section != ""
	}
	if m := cellsRe().FindStringSubmatch(spec); m != nil {
		p.Kind = PlaceCells
		p.Sheet = m[1]
		p.Col1, p.Row1 = columnNumber(m[2]), atoi(m[3])
		p.Col2, p.Row2 = p.Col1, p.Row1
		if m[4] != "" {
			p.Col2, p.Row2 = columnNumber(m[4]), atoi(m[5])
		}
		if p.Col2 < p.Col1 {
			p.Col1, p.Col2 = p.Col2, p.Col1
		}
		if p.Row2 < p.Row1 {
			p.Row1, p.Row2 = p.Row2, p.Row1
		}
		return p, p.Row1 >= 1 && p.Col1 >= 1 && p.Col2 <= 16384
	}
	return Place{}, false
}

// sectionKey is a heading path with its parts split at '›', '/' or '>' and
// joined by " › ": the form a section place is compared in, so that a
// heading holding '/' or '>' of its own ("Pros/Cons") is still found.
func sectionKey(s string) string {
	parts := strings.FieldsFunc(s, func(r rune) bool { return r == '›' || r == '/' || r == '>' })
	out := parts[:0]
	for _, x := range parts {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return strings.Join(out, " › ")
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// columnNumber is the 1-based column of letters ("A" 1, "AA" 27).
func columnNumber(s string) int {
	n := 0
	for _, r := range strings.ToUpper(s) {
		n = n*26 + int(r-'A'+1)
	}
	return n
}

// Name is how the place is named to the agent: "notes/plan.md lines 12–18",
// "notes/plan.md section Plan › Later", "budget.xlsx Sheet1!B2:D9",
// "photos/beach.png region 120,40–380,260 (pixels)", "report.docx
// paragraph 14".
func (p Place) Name() string {
	switch p.Kind {
	case PlaceLines:
		if p.From == p.To {
			return fmt.Sprintf("%s line %d", p.Path, p.From)
		}
		return fmt.Sprintf("%s lines %d–%d", p.Path, p.From, p.To)
	case PlaceSection:
		return fmt.Sprintf("%s section %s", p.Path, p.Section)
	case PlaceCells:
		r := ColumnName(p.Col1) + strconv.Itoa(p.Row1)
		if p.Col2 != p.Col1 || p.Row2 != p.Row1 {
			r += ":" + ColumnName(p.Col2) + strconv.Itoa(p.Row2)
		}
		if p.Sheet != "" {
			r = p.Sheet + "!" + r
		}
		return p.Path + " " + r
	case PlaceRegion:
		return fmt.Sprintf("%s region %d,%d–%d,%d (pixels)", p.Path, p.X1, p.Y1, p.X2, p.Y2)
	case PlaceParagraph:
		return fmt.Sprintf("%s paragraph %d", p.Path, p.From)
	}
	return p.Path + " (the whole file)"
}

// Described is a place as the agent is told of it: its name and what it
// holds, when that can be quoted (lines, cells' values, a paragraph).
type Described struct {
	Place  Place  `json:"place"`
	Name   string `json:"name"`
	Quoted string `json:"quoted,omitempty"`
	// PNG is a picture region cut out by the picture's previewer (out of
	// process), for the first MaxPictures regions of a prompt; agents that
	// take pictures get it as an image.
	PNG []byte `json:"-"`
}

// DescribePlaces reads each place in the task's copy (through its previewer
// where the place needs one) and checks it is in the file: lines within
// its length, a section it has, cells it holds, a region inside the
// picture, a paragraph it has. At most MaxPlaces.
func (k *Kernel) DescribePlaces(ctx context.Context, t *task.Task, h *pluginhost.Host, places []Place) ([]Described, error) {
	if len(places) > MaxPlaces {
		return nil, fmt.Errorf("%w: %d places; a prompt names at most %d (nothing was sent)", ErrPlace, len(places), MaxPlaces)
	}
	out := make([]Described, 0, len(places))
	pictures := 0
	for _, p := range places {
		crop := p.Kind == PlaceRegion && pictures < MaxPictures
		if crop {
			pictures++
		}
		d, err := k.describe(ctx, t, h, p, crop)
		if err != nil {
			return nil, fmt.Errorf("%w %s: %v (nothing was sent to the agent)", ErrPlace, p.Name(), err)
		}
		out = append(out, d)
	}
	return out, nil
}

func (k *Kernel) describe(ctx context.Context, t *task.Task, h *pluginhost.Host, p Place, crop bool) (Described, error) {
	d := Described{Place: p, Name: p.Name()}
	switch p.Kind {
	case PlaceFile:
		_, err := ReadCopyFile(t, p.Path, MaxPreviewBytes)
		return d, err
	case PlaceLines:
		data, err := ReadCopyFile(t, p.Path, MaxPreviewBytes)
		if err != nil {
			return d, err
		}
		var lines []string
		if utf8.Valid(data) {
			lines = strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		} else if lines, err = k.previewLines(ctx, t, h, p.Path); err != nil {
			return d, err
		}
		if p.To > len(lines) {
			return d, fmt.Errorf("the file has %d lines", len(lines))
		}
		var b strings.Builder
		for n := p.From; n <= p.To && n-p.From < maxQuotedLines && b.Len() < maxQuotedBytes; n++ {
			fmt.Fprintf(&b, "%d: %s\n", n, strings.TrimSuffix(lines[n-1], "\r"))
		}
		d.Quoted = strings.TrimSuffix(b.String(), "\n")
		return d, nil
	}
	if h == nil {
		return d, errors.New("no previewer host to read the place with")
	}
	opts := PreviewOptions{MaxBlocks: 200_000}
	if crop {
		opts.Crop = &previewer.Region{X1: p.X1, Y1: p.Y1, X2: p.X2, Y2: p.Y2}
	}
	pv, err := k.Preview(ctx, t, h, p.Path, opts)
	if err != nil {
		return d, err
	}
	switch p.Kind {
	case PlaceSection:
		for _, s := range Sections(pv.Blocks) {
			if k := sectionKey(s); k == p.Section || strings.HasSuffix(k, " › "+p.Section) {
				d.Name = p.Path + " section " + s
				return d, nil
			}
		}
		return d, errors.New("no such section (the Preview lists the file's headings)")
	case PlaceParagraph:
		for _, b := range pv.Blocks {
			if b.Paragraph != nil && b.Paragraph.Number == p.From {
				d.Quoted = clip(b.Paragraph.Text(), maxQuotedBytes)
				return d, nil
			}
		}
		return d, errors.New("no such paragraph (the Preview numbers them)")
	case PlaceRegion:
		for _, b := range pv.Blocks {
			if b.Image != nil {
				if p.X2 > b.Image.Width || p.Y2 > b.Image.Height {
					return d, fmt.Errorf("outside the picture of %d×%d pixels", b.Image.Width, b.Image.Height)
				}
				d.PNG = pv.CropPNG // empty from a previewer that does not crop
				return d, nil
			}
		}
		return d, errors.New("not a picture")
	case PlaceCells:
		return describeCells(d, pv)
	}
	return d, fmt.Errorf("unknown place %q", p.Kind)
}

// previewLines are the lines of a file that is not UTF-8 as its previewer
// shows and numbers them (Latin-1 bytes as �, UTF-16 converted), so a
// place names the lines the person picked in the Preview.
func (k *Kernel) previewLines(ctx context.Context, t *task.Task, h *pluginhost.Host, rel string) ([]string, error) {
	const notText = "not UTF-8 text, and its previewer shows no lines: name the whole file"
	if h == nil {
		return nil, errors.New(notText)
	}
	pv, err := k.Preview(ctx, t, h, rel, PreviewOptions{MaxBlocks: previewer.MaxBlocks})
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, b := range pv.Blocks {
		if b.Line != nil && b.Line.Number == len(lines)+1 {
			lines = append(lines, b.Line.Text)
		}
	}
	if len(lines) == 0 {
		return nil, errors.New(notText)
	}
	return lines, nil
}

func describeCells(d Described, pv *Preview) (Described, error) {
	p := d.Place
	sheet := p.Sheet
	var vals []string
	found := false
	for _, b := range pv.Blocks {
		r := b.Row
		if r == nil || r.Table != 0 {
			continue
		}
		if sheet == "" {
			sheet = r.Sheet // the first sheet
		}
		if r.Sheet != sheet {
			continue
		}
		found = true
		if r.Number < p.Row1 || r.Number > p.Row2 {
			continue
		}
		for c := p.Col1; c <= p.Col2 && c <= len(r.Cells); c++ {
			v := r.Cells[c-1]
			if c-1 < len(r.Formulas) && r.Formulas[c-1] != "" {
				v += " (=" + r.Formulas[c-1] + ")"
			}
			if v != "" && len(vals) < maxQuotedCells {
				vals = append(vals, ColumnName(c)+strconv.Itoa(r.Number)+" = "+clip(v, 256))
			}
		}
	}
	if !found && pv.Kind == "sheet" && p.Sheet != "" {
		return d, fmt.Errorf("no sheet named %q", p.Sheet)
	}
	if pv.Kind != "sheet" {
		return d, errors.New("not a sheet")
	}
	if d.Place.Sheet == "" && sheet != "" {
		d.Place.Sheet = sheet
		d.Name = d.Place.Name()
	}
	if len(vals) == 0 {
		d.Quoted = "(empty cells)"
	} else {
		d.Quoted = strings.Join(vals, "; ")
	}
	return d, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// AboutPrompt is prompt followed by the numbered list of places the person
// points at, each named so the agent can find it.
func AboutPrompt(prompt string, places []Described) string {
	if len(places) == 0 {
		return prompt
	}
	var b strings.Builder
	b.WriteString(strings.TrimRight(prompt, "\n"))
	b.WriteString("\n\nThe person points at these places in the files:\n")
	for i, d := range places {
		fmt.Fprintf(&b, "%d. %s", i+1, d.Name)
		if d.Quoted != "" {
			b.WriteString(":\n")
			for _, l := range strings.Split(d.Quoted, "\n") {
				b.WriteString("   " + l + "\n")
			}
		} else {
			b.WriteString("\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// Picture is a place sent to an agent as an image: its PNG and the line
// that names it in the prompt's text.
type Picture struct {
	Name string
	PNG  []byte
}

// AboutPictures are the picture regions of places that carry a PNG, at
// most MaxPictures, each named by its number in AboutPrompt's list.
func AboutPictures(places []Described) []Picture {
	var out []Picture
	for i, d := range places {
		if len(d.PNG) == 0 || len(out) == MaxPictures {
			continue
		}
		out = append(out, Picture{Name: fmt.Sprintf("place %d, %s", i+1, d.Name), PNG: d.PNG})
	}
	return out
}

// Sections are the heading paths of a preview in order ("Plan › Later"),
// as a section place names them.
func Sections(blocks []PreviewBlock) []string {
	type head struct {
		level int
		text  string
	}
	var stack []head
	var out []string
	for _, b := range blocks {
		if b.Heading == nil {
			continue
		}
		for len(stack) > 0 && stack[len(stack)-1].level >= b.Heading.Level {
			stack = stack[:len(stack)-1]
		}
		stack = append(stack, head{b.Heading.Level, b.Heading.Text})
		names := make([]string, len(stack))
		for i, x := range stack {
			names[i] = x.text
		}
		out = append(out, strings.Join(names, " › "))
	}
	return out
}

// ColumnName is a sheet's column letters for the 1-based column n: 1 is A,
// 26 is Z, 27 is AA.
func ColumnName(n int) string {
	if n < 1 {
		return ""
	}
	var b []byte
	for n > 0 {
		n--
		b = append(b, byte('A'+n%26))
		n /= 26
	}
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}
