package daemon

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

// pngOf encodes a w×h PNG whose colour depends on shade.
func pngOf(t testing.TB, w, h int, shade uint8) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{shade, 100, 200, 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// pngHeader is a PNG signature and IHDR claiming w×h, without pixel data:
// enough for DecodeConfig, the way a hostile file would claim a huge size.
func pngHeader(w, h uint32) []byte {
	b := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR")
	b = append(b, byte(w>>24), byte(w>>16), byte(w>>8), byte(w), byte(h>>24), byte(h>>16), byte(h>>8), byte(h), 8, 6, 0, 0, 0)
	sum := crc32.ChecksumIEEE(b[12:])
	return append(b, byte(sum>>24), byte(sum>>16), byte(sum>>8), byte(sum))
}

func TestSniffImage(t *testing.T) {
	t.Parallel()
	small := image.NewRGBA(image.Rect(0, 0, 3, 2))
	var jb, gb bytes.Buffer
	must(t, jpeg.Encode(&jb, small, nil))
	must(t, gif.Encode(&gb, small, nil))
	webp, err := os.ReadFile("testdata/tiny.webp")
	must(t, err)
	tests := map[string]struct {
		b    []byte
		want string
	}{
		"png":                   {pngOf(t, 2, 2, 0), "image/png"},
		"jpeg":                  {jb.Bytes(), "image/jpeg"},
		"gif":                   {gb.Bytes(), "image/gif"},
		"webp":                  {webp, "image/webp"},
		"svg is not shown":      {[]byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`), ""},
		"html named png":        {[]byte("<html><script>alert(1)</script>"), ""},
		"png magic, junk after": {[]byte("\x89PNG\r\n\x1a\nnot really"), ""},
		"over 40 megapixels":    {pngHeader(8000, 5001), ""},
		"at 40 megapixels":      {pngHeader(8000, 5000), "image/png"},
		"over 8 MiB":            {append(pngOf(t, 1, 1, 0), make([]byte, MaxImageBytes)...), ""},
		"empty":                 {nil, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := SniffImage(tc.b)
			if tc.want == "" {
				if !errors.Is(err, errNotImage) {
					t.Fatalf("got %q, %v; want refused", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %s", got, err, tc.want)
			}
		})
	}
}

func FuzzSniffImage(f *testing.F) {
	f.Add(pngOf(f, 2, 2, 9))
	f.Add(pngHeader(100, 100))
	f.Add([]byte("GIF89a\x01\x00\x01\x00"))
	f.Add([]byte("RIFF\x00\x00\x00\x00WEBPVP8X"))
	f.Fuzz(func(t *testing.T, b []byte) {
		typ, err := SniffImage(b)
		if err == nil && typ == "" {
			t.Fatal("accepted without a type")
		}
	})
}

func TestFilesNeverFollowALinkOrLeaveTheCopy(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, Config{})
	rep, err := d.k.NewTask(context.Background(), sampleFolder(t))
	must(t, err)
	tk := rep.Task
	outside := t.TempDir()
	must(t, os.WriteFile(filepath.Join(outside, "secret.png"), pngOf(t, 2, 2, 1), 0o644))
	must(t, os.Symlink(outside, filepath.Join(tk.Paths.Copy, "out")))
	must(t, os.Symlink(filepath.Join(outside, "secret.png"), filepath.Join(tk.Paths.Copy, "pic.png")))
	must(t, os.WriteFile(filepath.Join(tk.Paths.Copy, "logo.png"), pngOf(t, 4, 3, 200), 0o644))

	es, err := d.ListDir(tk, "")
	must(t, err)
	byName := map[string]FileEntry{}
	for _, e := range es {
		byName[e.Name] = e
	}
	if e := byName["out"]; e.Type != "link" || e.Target != outside || e.Change != "link" {
		t.Fatalf("link entry = %+v, want a link marked added, not followed", e)
	}
	if e := byName["logo.png"]; e.Change != "modify" {
		t.Fatalf("logo.png = %+v, want modify", e)
	}
	if e := byName["notes"]; e.Type != "dir" {
		t.Fatalf("notes = %+v", e)
	}
	attacks := map[string]string{
		"through a link": "out",
		"into a link":    "out/x",
		"dot dot":        "../../",
		"absolute":       "/etc",
		"parent name":    "notes/../..",
	}
	for name, p := range attacks {
		t.Run(name, func(t *testing.T) {
			if es, err := d.ListDir(tk, p); err == nil {
				t.Fatalf("listed %q: %+v", p, es)
			}
		})
	}
	if _, _, err := d.ImageBytes(tk, "pic.png", "after"); err == nil {
		t.Fatal("served a picture through a link out of the copy")
	}
	if _, _, err := d.ImageBytes(tk, "out/secret.png", "after"); err == nil {
		t.Fatal("served a picture through a linked directory")
	}
	after, typ, err := d.ImageBytes(tk, "logo.png", "after")
	must(t, err)
	before, _, err := d.ImageBytes(tk, "logo.png", "before")
	must(t, err)
	if typ != "image/png" || bytes.Equal(before, after) || !bytes.Equal(before, pngOf(t, 4, 3, 0)) {
		t.Fatalf("before/after wrong: type %s, same=%v", typ, bytes.Equal(before, after))
	}
}
