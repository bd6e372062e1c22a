// Package image is the built-in previewer for pictures: PNG, JPEG, GIF and
// WebP. Only a file whose header proves it to be such a picture, whose
// structure is walked whole from its signature to its end marker with
// nothing after it (so a truncated file or a ZIP that is also a PNG is
// refused), under MaxBytes and MaxPixels, and a GIF of at most MaxFrames,
// is answered; the app then shows its pixels. Nothing is decoded beyond the
// headers (the pixels are the browser's to draw), except when the host asks
// for a region of the picture as a PNG (Request.Crop, for an agent that
// takes pictures): then the proven picture is decoded here, out of the
// host's process, the region cut out, scaled down to fit
// previewer.MaxCropSide and encoded as a PNG of at most
// previewer.MaxCropBytes.
package image

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	stdimage "image"
	_ "image/gif" // DecodeConfig
	_ "image/jpeg"
	"image/png"
	"strconv"
	"strings"

	_ "golang.org/x/image/webp" // DecodeConfig

	"github.com/kulehq/kule/plugins/previewer/names"
	"github.com/kulehq/kule/sdk/previewer"
)

// Limits of a picture shown.
const (
	MaxBytes  = 8 << 20
	MaxPixels = 40_000_000
	MaxFrames = 5_000
	// maxChunks bounds the PNG chunks and JPEG segments walked.
	maxChunks = 100_000
)

// Previewer shows pictures' facts.
type Previewer struct{}

var _ previewer.Previewer = Previewer{}

// New returns the picture previewer.
func New() previewer.Previewer { return Previewer{} }

// Name is "image".
func (Previewer) Name() string { return "image" }

// Accepts *.png, *.jpg, *.jpeg, *.gif and *.webp (names.Image).
func (Previewer) Accepts(p string) bool { return names.Image(p) }

// Preview proves req.Content a picture and answers its format and size.
func (Previewer) Preview(_ context.Context, req previewer.Request) (previewer.Response, error) {
	img, err := Check(req.Content)
	if err != nil {
		return previewer.Response{}, err
	}
	resp := previewer.Response{Kind: previewer.KindImage, Blocks: []previewer.Block{{Image: &img}}}
	if want := names.ImageFormat(req.Path); want != "" && want != img.Format {
		resp.Notes = append(resp.Notes, fmt.Sprintf("named as %s but is a %s", strings.ToUpper(want), strings.ToUpper(img.Format)))
	}
	if req.Crop != nil {
		if resp.CropPNG, err = Crop(req.Content, img, *req.Crop); err != nil {
			return previewer.Response{}, err
		}
	}
	return resp, nil
}

// Crop decodes b, a picture Check proved to be img, and answers the region r
// of it as a PNG, scaled down (nearest pixel) so neither side exceeds
// previewer.MaxCropSide and the PNG fits previewer.MaxCropBytes. A region
// not inside the picture is refused.
func Crop(b []byte, img previewer.Image, r previewer.Region) ([]byte, error) {
	if !r.In(img.Width, img.Height) {
		return nil, refuse("region %d,%d–%d,%d is not inside the picture of %d×%d pixels", r.X1, r.Y1, r.X2, r.Y2, img.Width, img.Height)
	}
	src, _, err := stdimage.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, refuse("%s does not decode: %v", strings.ToUpper(img.Format), err)
	}
	o := src.Bounds().Min
	rect := stdimage.Rect(o.X+r.X1, o.Y+r.Y1, o.X+r.X2, o.Y+r.Y2)
	if !rect.In(src.Bounds()) {
		return nil, refuse("region %d,%d–%d,%d is not inside the decoded picture of %d×%d pixels", r.X1, r.Y1, r.X2, r.Y2, src.Bounds().Dx(), src.Bounds().Dy())
	}
	side := previewer.MaxCropSide
	for side >= 16 {
		out := scale(src, rect, side)
		var buf bytes.Buffer
		if err := png.Encode(&buf, out); err != nil {
			return nil, refuse("the region does not encode as PNG: %v", err)
		}
		if buf.Len() <= previewer.MaxCropBytes {
			return buf.Bytes(), nil
		}
		side /= 2 // noisy pixels: fewer of them until the PNG fits
	}
	return nil, refuse("the region does not fit %d bytes as a PNG", previewer.MaxCropBytes)
}

// scale copies rect of src into a new picture whose longer side is at most
// side pixels, taking the nearest source pixel for each.
func scale(src stdimage.Image, rect stdimage.Rectangle, side int) *stdimage.NRGBA {
	w, h := rect.Dx(), rect.Dy()
	dw, dh := w, h
	if w > side || h > side {
		if w >= h {
			dw, dh = side, max(1, int(int64(h)*int64(side)/int64(w)))
		} else {
			dw, dh = max(1, int(int64(w)*int64(side)/int64(h))), side
		}
	}
	dst := stdimage.NewNRGBA(stdimage.Rect(0, 0, dw, dh))
	for y := 0; y < dh; y++ {
		sy := rect.Min.Y + int(int64(y)*int64(h)/int64(dh))
		for x := 0; x < dw; x++ {
			sx := rect.Min.X + int(int64(x)*int64(w)/int64(dw))
			dst.Set(x, y, src.At(sx, sy))
		}
	}
	return dst
}

func refuse(format string, args ...any) error {
	return fmt.Errorf("%w: %s", previewer.ErrCannotPreview, fmt.Sprintf(format, args...))
}

// Check proves b a picture Kule shows and returns what its header says.
func Check(b []byte) (previewer.Image, error) {
	if len(b) > MaxBytes {
		return previewer.Image{}, refuse("picture of %d bytes, larger than %d MiB", len(b), MaxBytes>>20)
	}
	var format string
	var meta map[string]string
	var err error
	switch {
	case bytes.HasPrefix(b, pngSig):
		format, err = "png", walkPNG(b)
	case bytes.HasPrefix(b, []byte{0xFF, 0xD8, 0xFF}):
		format, err = "jpeg", walkJPEG(b)
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		var frames int
		format = "gif"
		frames, err = walkGIF(b)
		meta = map[string]string{"frames": strconv.Itoa(frames)}
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		format, err = "webp", walkWebP(b)
	default:
		return previewer.Image{}, refuse("not a PNG, JPEG, GIF or WebP picture (its first bytes are no picture's signature)")
	}
	if err != nil {
		return previewer.Image{}, err
	}
	cfg, got, err := stdimage.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return previewer.Image{}, refuse("%s header does not decode: %v", strings.ToUpper(format), err)
	}
	if got != format {
		return previewer.Image{}, refuse("header says %s, structure says %s", got, format)
	}
	if cfg.Width < 1 || cfg.Height < 1 {
		return previewer.Image{}, refuse("picture of %d×%d pixels", cfg.Width, cfg.Height)
	}
	if px := int64(cfg.Width) * int64(cfg.Height); px > MaxPixels {
		return previewer.Image{}, refuse("picture of %d×%d pixels (%d megapixels), more than %d", cfg.Width, cfg.Height, px/1_000_000, MaxPixels/1_000_000)
	}
	return previewer.Image{Format: format, Width: cfg.Width, Height: cfg.Height, Metadata: meta}, nil
}

var pngSig = []byte("\x89PNG\r\n\x1a\n")

// walkPNG walks every chunk, checking each CRC, from IHDR to IEND, which must
// end the file.
func walkPNG(b []byte) error {
	i := len(pngSig)
	for n := 0; ; n++ {
		if n > maxChunks {
			return refuse("PNG of more than %d chunks", maxChunks)
		}
		if len(b)-i < 12 {
			return refuse("truncated PNG (it ends inside a chunk, before IEND)")
		}
		size := binary.BigEndian.Uint32(b[i:])
		typ := string(b[i+4 : i+8])
		if uint64(size) > uint64(len(b)-i-12) {
			return refuse("truncated PNG (chunk %q claims %d bytes beyond the file's end)", typ, size)
		}
		end := i + 12 + int(size)
		if n == 0 && typ != "IHDR" {
			return refuse("PNG whose first chunk is %q, not IHDR", typ)
		}
		if crc32.ChecksumIEEE(b[i+4:end-4]) != binary.BigEndian.Uint32(b[end-4:]) {
			return refuse("damaged PNG (chunk %q fails its checksum)", typ)
		}
		i = end
		if typ == "IEND" {
			break
		}
	}
	if i != len(b) {
		return refuse("%d bytes after the PNG's end (a file that is also something else)", len(b)-i)
	}
	return nil
}

// walkJPEG walks the segments and the entropy-coded data to the EOI marker,
// which must end the file.
func walkJPEG(b []byte) error {
	i := 2
	for n := 0; ; n++ {
		if n > maxChunks {
			return refuse("JPEG of more than %d segments", maxChunks)
		}
		for i < len(b) && b[i] == 0xFF && i+1 < len(b) && b[i+1] == 0xFF {
			i++ // fill bytes
		}
		if len(b)-i < 2 || b[i] != 0xFF {
			return refuse("truncated or damaged JPEG (no marker where one belongs, at byte %d)", i)
		}
		m := b[i+1]
		i += 2
		switch {
		case m == 0xD9:
			if i != len(b) {
				return refuse("%d bytes after the JPEG's end (a file that is also something else)", len(b)-i)
			}
			return nil
		case m >= 0xD0 && m <= 0xD7, m == 0x01:
			continue
		}
		if len(b)-i < 2 {
			return refuse("truncated JPEG (it ends inside a segment)")
		}
		size := int(binary.BigEndian.Uint16(b[i:]))
		if size < 2 || size > len(b)-i {
			return refuse("truncated JPEG (a segment claims %d bytes beyond the file's end)", size)
		}
		i += size
		if m == 0xDA { // start of scan: entropy-coded data up to the next marker
			for {
				j := bytes.IndexByte(b[i:], 0xFF)
				if j < 0 || i+j+1 >= len(b) {
					return refuse("truncated JPEG (it ends inside its picture data)")
				}
				i += j
				next := b[i+1]
				if next == 0x00 || (next >= 0xD0 && next <= 0xD7) {
					i += 2
					continue
				}
				break
			}
		}
	}
}

// walkGIF walks every block to the trailer, which must end the file, and
// counts the frames.
func walkGIF(b []byte) (int, error) {
	if len(b) < 13 {
		return 0, refuse("truncated GIF (shorter than its header)")
	}
	i := 13
	if b[10]&0x80 != 0 {
		i += 3 << (int(b[10]&7) + 1)
	}
	frames := 0
	subBlocks := func() error {
		for {
			if i >= len(b) {
				return refuse("truncated GIF (it ends inside a block)")
			}
			n := int(b[i])
			i++
			if n == 0 {
				return nil
			}
			i += n
		}
	}
	for {
		if i >= len(b) {
			return 0, refuse("truncated GIF (no trailer)")
		}
		switch b[i] {
		case 0x3B:
			i++
			if i != len(b) {
				return 0, refuse("%d bytes after the GIF's end (a file that is also something else)", len(b)-i)
			}
			if frames == 0 {
				return 0, refuse("GIF without a single frame")
			}
			return frames, nil
		case 0x21:
			i += 2
			if err := subBlocks(); err != nil {
				return 0, err
			}
		case 0x2C:
			frames++
			if frames > MaxFrames {
				return 0, refuse("GIF of more than %d frames", MaxFrames)
			}
			if len(b)-i < 10 {
				return 0, refuse("truncated GIF (it ends inside a frame's descriptor)")
			}
			flags := b[i+9]
			i += 10
			if flags&0x80 != 0 {
				i += 3 << (int(flags&7) + 1)
			}
			i++ // LZW minimum code size
			if err := subBlocks(); err != nil {
				return 0, err
			}
		default:
			return 0, refuse("damaged GIF (an unknown block 0x%02x at byte %d)", b[i], i)
		}
	}
}

// walkWebP checks that the RIFF container's size is the file's.
func walkWebP(b []byte) error {
	size := int64(binary.LittleEndian.Uint32(b[4:8])) + 8
	switch {
	case size > int64(len(b)):
		return refuse("truncated WebP (%d of the %d bytes its header claims)", len(b), size)
	case size+1 < int64(len(b)) || (size < int64(len(b)) && b[len(b)-1] != 0):
		return refuse("%d bytes after the WebP's end (a file that is also something else)", int64(len(b))-size)
	}
	return nil
}
