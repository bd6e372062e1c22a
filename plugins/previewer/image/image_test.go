package image

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	stdimage "image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"

	"github.com/kulehq/kule/sdk/previewer"
	"github.com/kulehq/kule/sdk/previewer/previewertest"
)

func pic(w, h int) *stdimage.Paletted {
	p := stdimage.NewPaletted(stdimage.Rect(0, 0, w, h), color.Palette{color.Black, color.White})
	p.SetColorIndex(1, 1, 1)
	return p
}

func pngOf(t testing.TB, w, h int) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, pic(w, h)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func jpegOf(t testing.TB) []byte {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, pic(16, 8), nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func gifOf(t testing.TB, frames int) []byte {
	g := &gif.GIF{}
	for i := 0; i < frames; i++ {
		g.Image = append(g.Image, pic(4, 3))
		g.Delay = append(g.Delay, 1)
	}
	var b bytes.Buffer
	if err := gif.EncodeAll(&b, g); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// webp1x1 is a 1×1 lossless WebP.
var webp1x1 = []byte("RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00\x2f\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00")

// pngDeclaring is a PNG whose IHDR declares w×h pixels, with valid
// checksums and no picture data worth the name.
func pngDeclaring(w, h uint32) []byte {
	chunk := func(typ string, data []byte) []byte {
		var b bytes.Buffer
		binary.Write(&b, binary.BigEndian, uint32(len(data)))
		b.WriteString(typ)
		b.Write(data)
		binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(append([]byte(typ), data...)))
		return b.Bytes()
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr, w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 2
	out := append([]byte(nil), pngSig...)
	out = append(out, chunk("IHDR", ihdr)...)
	out = append(out, chunk("IDAT", []byte{0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01})...)
	return append(out, chunk("IEND", nil)...)
}

func TestConformance(t *testing.T) {
	previewertest.Run(t, New(),
		previewertest.Sample{Path: "a.png", Src: pngOf(t, 5, 4)},
		previewertest.Sample{Path: "a.jpg", Src: jpegOf(t)},
		previewertest.Sample{Path: "a.gif", Src: gifOf(t, 3)},
		previewertest.Sample{Path: "a.webp", Src: webp1x1},
	)
}

func TestPictures(t *testing.T) {
	for name, tc := range map[string]struct {
		path   string
		src    []byte
		format string
		w, h   int
	}{
		"png":  {"a.png", pngOf(t, 5, 4), "png", 5, 4},
		"jpeg": {"a.JPG", jpegOf(t), "jpeg", 16, 8},
		"gif":  {"a.gif", gifOf(t, 3), "gif", 4, 3},
		"webp": {"a.webp", webp1x1, "webp", 1, 1},
	} {
		t.Run(name, func(t *testing.T) {
			r, err := New().Preview(context.Background(), previewer.Request{Path: tc.path, Content: tc.src})
			if err != nil {
				t.Fatal(err)
			}
			im := r.Blocks[0].Image
			if r.Kind != previewer.KindImage || im.Format != tc.format || im.Width != tc.w || im.Height != tc.h {
				t.Fatalf("got %+v %+v", r, im)
			}
		})
	}
}

// TestHostilePictures: each is refused with a reason, before any pixel
// reaches the window.
func TestHostilePictures(t *testing.T) {
	p := pngOf(t, 5, 4)
	j := jpegOf(t)
	g := gifOf(t, 2)
	manyFrames := gifOf(t, MaxFrames+1)
	// A million frames do not fit the size limit: the walk never starts.
	million := append(append([]byte(nil), g[:len(g)-1]...), bytes.Repeat(g[len(g)-1-27:len(g)-1], 1_000_000)...)
	million = append(million, 0x3B)
	tests := map[string]struct {
		path string
		src  []byte
		says string
	}{
		"huge png dimensions":  {"a.png", pngDeclaring(100_000, 100_000), "megapixels"},
		"million-frame gif":    {"a.gif", million, "larger than 8 MiB"},
		"too many frames":      {"a.gif", manyFrames, "frames"},
		"truncated png":        {"a.png", p[:len(p)-5], "truncated PNG"},
		"truncated jpeg":       {"a.jpg", j[:len(j)/2], "truncated"},
		"truncated gif":        {"a.gif", g[:len(g)-4], "truncated GIF"},
		"truncated webp":       {"a.webp", webp1x1[:20], "truncated WebP"},
		"png that is a zip":    {"a.png", append(append([]byte(nil), p...), "PK\x03\x04\x14\x00\x00\x00"...), "after the PNG's end"},
		"jpeg that is a zip":   {"a.jpg", append(append([]byte(nil), j...), "PK\x03\x04"...), "after the JPEG's end"},
		"zip named png":        {"a.png", []byte("PK\x03\x04\x14\x00\x00\x00\x08\x00"), "signature"},
		"damaged png checksum": {"a.png", flip(p, 20), "checksum"},
		"text named png":       {"a.png", []byte("hello"), "signature"},
		"larger than 8 MiB":    {"a.png", append(append([]byte(nil), p...), make([]byte, MaxBytes)...), "larger than 8 MiB"},
		"png without iend":     {"a.png", p[:len(p)-12], "truncated PNG"},
		"empty":                {"a.gif", nil, "signature"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := New().Preview(context.Background(), previewer.Request{Path: tc.path, Content: tc.src})
			if !errors.Is(err, previewer.ErrCannotPreview) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("got %v, want a refusal saying %q", err, tc.says)
			}
		})
	}
}

func flip(b []byte, i int) []byte {
	c := append([]byte(nil), b...)
	c[i] ^= 0xFF
	return c
}

func FuzzPicture(f *testing.F) {
	f.Add(pngOf(f, 3, 2))
	f.Add(jpegOf(f))
	f.Add(gifOf(f, 2))
	f.Add(webp1x1)
	f.Add(pngDeclaring(100_000, 100_000))
	f.Fuzz(func(t *testing.T, src []byte) {
		for _, path := range []string{"a.png", "a.gif"} {
			if err := previewertest.Check(New(), path, src); err != nil {
				t.Fatal(err)
			}
		}
	})
}
