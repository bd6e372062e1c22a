// Package previewer is what a previewer plugin implements: it reads the bytes
// of one file and answers a safe render model — plain data the app and the
// terminal draw themselves (text lines, headings, paragraphs, code, table
// rows, picture facts), never HTML or script.
//
// A previewer has no file system and no network: it gets bytes and returns
// blocks. The host checks every answer (Validate) before it draws it.
package previewer

import (
	"context"
	"errors"
)

// Kinds of preview, as Response.Kind names them.
const (
	KindText     = "text"
	KindMarkdown = "markdown"
	KindImage    = "image"
	KindSheet    = "sheet"
	KindDocument = "document"
)

// ErrCannotPreview is what a previewer wraps when a file is not one it can
// show (a binary file named .txt, a truncated picture, a zip bomb). Its
// message, after "cannot preview: ", is what the person reads.
var ErrCannotPreview = errors.New("cannot preview")

// Previewer renders files it understands.
//
// Lifecycle:
//  1. The host asks Accepts for a file's path (no bytes yet).
//  2. For an accepted file it calls Preview once with the file's bytes, as
//     the task's copy holds them now.
//  3. A file the previewer cannot show answers an error wrapping
//     ErrCannotPreview that says why; a previewer never panics on bad input
//     and bounds the memory it uses by the size of what it was given.
type Previewer interface {
	// Name is the previewer's name, e.g. "text", "sheet".
	Name() string
	// Accepts says whether this previewer reads the file at path (by name).
	Accepts(path string) bool
	// Preview renders req.Content.
	Preview(ctx context.Context, req Request) (Response, error)
}

// Request is what the host hands Preview. New inputs arrive as new fields.
type Request struct {
	// Path is the file's slash-separated path in the folder.
	Path string
	// Content is the file's bytes. The previewer may not keep or change them.
	Content []byte
	// MaxBlocks is the most blocks the host draws; 0 means DefaultMaxBlocks.
	MaxBlocks int
	// Format asks for packed data (JSON, XML) laid out for reading.
	Format bool
	// Crop, when set, asks a picture previewer for this region of the
	// picture as a PNG (Response.CropPNG), at most MaxCropSide pixels on
	// its longer side. A previewer that does not read pictures ignores it.
	Crop *Region
}

// Region is a rectangle of a picture in pixels, from (X1,Y1) inclusive to
// (X2,Y2) exclusive; (0,0) is the top left corner.
type Region struct {
	X1, Y1, X2, Y2 int
}

// In says whether the region is non-empty and lies inside a picture of
// width×height pixels.
func (r Region) In(width, height int) bool {
	return r.X1 >= 0 && r.Y1 >= 0 && r.X2 > r.X1 && r.Y2 > r.Y1 && r.X2 <= width && r.Y2 <= height
}

// Limit is req.MaxBlocks with the default and the ceiling applied.
func (r Request) Limit() int {
	if r.MaxBlocks <= 0 || r.MaxBlocks > MaxBlocks {
		return DefaultMaxBlocks
	}
	return r.MaxBlocks
}

// Response is what Preview answers.
type Response struct {
	// Kind is what the file was read as (KindText, KindSheet, ...).
	Kind string `json:"kind"`
	// Language names a text file's language ("go", "json"), when known.
	Language string `json:"language,omitempty"`
	// Blocks are the drawable pieces, in file order.
	Blocks []Block `json:"blocks"`
	// Truncated: the file holds more than Blocks show.
	Truncated bool `json:"truncated,omitempty"`
	// Notes are plain-text remarks for the person.
	Notes []string `json:"notes,omitempty"`
	// CropPNG is the PNG of Request.Crop, when one was asked for and the
	// previewer crops; it is handed to agents, never drawn by the app.
	CropPNG []byte `json:"-"`
}

// Block is one drawable piece: exactly one of its fields is set.
type Block struct {
	Line      *Line      `json:"line,omitempty"`
	Heading   *Heading   `json:"heading,omitempty"`
	Paragraph *Paragraph `json:"paragraph,omitempty"`
	Code      *Code      `json:"code,omitempty"`
	Row       *Row       `json:"row,omitempty"`
	Image     *Image     `json:"image,omitempty"`
}

// Line is one line of a text file.
type Line struct {
	Number int    `json:"n"`
	Text   string `json:"text"`
}

// Heading is a section heading, level 1 to 6.
type Heading struct {
	Level int    `json:"level"`
	Text  string `json:"text"`
}

// Paragraph is a paragraph or a list item.
type Paragraph struct {
	Runs []Run `json:"runs"`
	// Number is the paragraph's number in the document, from 1 (0: none).
	Number int `json:"number,omitempty"`
	// Marker is a list item's marker ("1.", "•"); empty for a paragraph.
	Marker string `json:"marker,omitempty"`
	// Level is how deep in lists and quotes the paragraph stands: 0 for a
	// paragraph of the body, 1 for an item of a top-level list.
	Level int `json:"level,omitempty"`
}

// Text is the paragraph's runs joined.
func (p Paragraph) Text() string {
	n := 0
	for _, r := range p.Runs {
		n += len(r.Text)
	}
	b := make([]byte, 0, n)
	for _, r := range p.Runs {
		b = append(b, r.Text...)
	}
	return string(b)
}

// Run is text with simple emphasis. Link is shown as text, never followed.
type Run struct {
	Text   string `json:"text"`
	Bold   bool   `json:"bold,omitempty"`
	Italic bool   `json:"italic,omitempty"`
	Code   bool   `json:"code,omitempty"`
	Link   string `json:"link,omitempty"`
}

// Code is a block of code or preformatted text.
type Code struct {
	Language string `json:"language,omitempty"`
	Text     string `json:"text"`
}

// Row is one row of a sheet (Sheet set) or of a document's table (Table set).
type Row struct {
	Sheet string `json:"sheet,omitempty"`
	// Table is the document table's number, from 1; 0 for a sheet.
	Table int `json:"table,omitempty"`
	// Number is the row's number, from 1.
	Number int `json:"row"`
	// Cells are the values from column A on.
	Cells []string `json:"cells"`
	// Formulas are each cell's formula without "=", beside Cells; nil or
	// "" where a cell has none.
	Formulas []string `json:"formulas,omitempty"`
}

// Image is what a picture's header proves.
type Image struct {
	Format   string            `json:"format"`
	Width    int               `json:"width"`
	Height   int               `json:"height"`
	Metadata map[string]string `json:"metadata,omitempty"`
}
