package previewer

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// Limits of a response the host accepts. A previewer that answers more has
// answered garbage; it should truncate and say so instead.
const (
	// DefaultMaxBlocks is how many blocks a request asks for by default.
	DefaultMaxBlocks = 50_000
	// MaxBlocks is the most blocks a request may ask for.
	MaxBlocks = 200_000
	// MaxText is the most bytes of text one response may carry in all.
	MaxText = 32 << 20
	// MaxCells is the most cells one row may carry.
	MaxCells = 16_384
	// MaxNotes is the most notes one response may carry.
	MaxNotes = 32
	// MaxCropSide is the most pixels a cropped region's PNG holds on either
	// side: a larger region is scaled down to fit.
	MaxCropSide = 1024
	// MaxCropBytes is the most bytes a cropped region's PNG may hold.
	MaxCropBytes = 3 << 20 // under gRPC's 4 MiB message limit
	// MaxMessage is the most bytes one request or answer may hold on the
	// plugin wire, set on both of its ends in place of gRPC's default of
	// 4 MiB: a request carries the whole file (the host reads up to
	// 16 MiB) and an answer up to MaxText of text with its framing.
	MaxMessage = 64 << 20
)

// ErrInvalid is returned by Validate.
var ErrInvalid = errors.New("preview response invalid")

// Validate checks a response before the host draws it: each block holds
// exactly one piece, every string is UTF-8, headings are of level 1 to 6,
// rows and line numbers are positive, and the whole stays within the limits
// above (limit is the request's Limit).
func Validate(r Response, limit int) error {
	if len(r.Blocks) > limit {
		return fmt.Errorf("%w: %d blocks, more than the %d asked for", ErrInvalid, len(r.Blocks), limit)
	}
	if len(r.Notes) > MaxNotes {
		return fmt.Errorf("%w: %d notes", ErrInvalid, len(r.Notes))
	}
	if len(r.CropPNG) > 0 {
		if err := checkCropPNG(r.CropPNG); err != nil {
			return fmt.Errorf("%w: crop: %v", ErrInvalid, err)
		}
	}
	v := validator{}
	v.str("kind", r.Kind)
	v.str("language", r.Language)
	for _, n := range r.Notes {
		v.str("note", n)
	}
	for i, b := range r.Blocks {
		if err := v.block(b); err != nil {
			return fmt.Errorf("%w: block %d: %v", ErrInvalid, i, err)
		}
		if v.err != nil {
			return fmt.Errorf("%w: block %d: %v", ErrInvalid, i, v.err)
		}
	}
	if v.err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, v.err)
	}
	return nil
}

type validator struct {
	text int
	err  error
}

func (v *validator) str(what, s string) {
	if v.err != nil {
		return
	}
	v.text += len(s)
	switch {
	case v.text > MaxText:
		v.err = fmt.Errorf("more than %d bytes of text in all", MaxText)
	case !utf8.ValidString(s):
		v.err = fmt.Errorf("%s is not UTF-8", what)
	}
}

func (v *validator) block(b Block) error {
	n := 0
	if b.Line != nil {
		n++
		if b.Line.Number < 1 {
			return fmt.Errorf("line number %d", b.Line.Number)
		}
		v.str("line", b.Line.Text)
	}
	if b.Heading != nil {
		n++
		if b.Heading.Level < 1 || b.Heading.Level > 6 {
			return fmt.Errorf("heading level %d", b.Heading.Level)
		}
		v.str("heading", b.Heading.Text)
	}
	if b.Paragraph != nil {
		n++
		if b.Paragraph.Number < 0 || b.Paragraph.Level < 0 || b.Paragraph.Level > 32 {
			return fmt.Errorf("paragraph number %d level %d", b.Paragraph.Number, b.Paragraph.Level)
		}
		v.str("marker", b.Paragraph.Marker)
		for _, r := range b.Paragraph.Runs {
			v.str("run", r.Text)
			v.str("link", r.Link)
		}
	}
	if b.Code != nil {
		n++
		v.str("code language", b.Code.Language)
		v.str("code", b.Code.Text)
	}
	if b.Row != nil {
		n++
		if b.Row.Number < 1 || b.Row.Table < 0 {
			return fmt.Errorf("row %d of table %d", b.Row.Number, b.Row.Table)
		}
		if len(b.Row.Cells) > MaxCells || len(b.Row.Formulas) > len(b.Row.Cells) {
			return fmt.Errorf("row %d: %d cells, %d formulas", b.Row.Number, len(b.Row.Cells), len(b.Row.Formulas))
		}
		v.str("sheet", b.Row.Sheet)
		for _, c := range b.Row.Cells {
			v.str("cell", c)
		}
		for _, f := range b.Row.Formulas {
			v.str("formula", f)
		}
	}
	if b.Image != nil {
		n++
		if b.Image.Width < 1 || b.Image.Height < 1 {
			return fmt.Errorf("picture of %d×%d pixels", b.Image.Width, b.Image.Height)
		}
		if len(b.Image.Metadata) > 64 {
			return fmt.Errorf("%d metadata keys", len(b.Image.Metadata))
		}
		v.str("format", b.Image.Format)
		for k, val := range b.Image.Metadata {
			v.str("metadata key", k)
			v.str("metadata", val)
		}
	}
	if n != 1 {
		return fmt.Errorf("holds %d pieces, want exactly one", n)
	}
	return nil
}

// checkCropPNG checks, from its first 24 bytes and without decoding it, that
// b is a PNG within MaxCropBytes and MaxCropSide: the host hands it on to an
// agent and never decodes a previewer's picture itself.
func checkCropPNG(b []byte) error {
	if len(b) > MaxCropBytes {
		return fmt.Errorf("%d bytes, more than %d", len(b), MaxCropBytes)
	}
	if len(b) < 24 || string(b[:8]) != "\x89PNG\r\n\x1a\n" || string(b[12:16]) != "IHDR" {
		return errors.New("not a PNG")
	}
	w := int64(b[16])<<24 | int64(b[17])<<16 | int64(b[18])<<8 | int64(b[19])
	h := int64(b[20])<<24 | int64(b[21])<<16 | int64(b[22])<<8 | int64(b[23])
	if w < 1 || h < 1 || w > MaxCropSide || h > MaxCropSide {
		return fmt.Errorf("a PNG of %d×%d pixels, not within %d on each side", w, h, MaxCropSide)
	}
	return nil
}
