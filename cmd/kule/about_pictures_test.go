package main

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAboutPictures: kule run --about's picture regions are cut out by the
// built-in picture previewer, run out of process as `kule-plugins __plugin
// previewer/image`: the first three come back as PNGs of the regions (their
// pixels checked), a fourth is named in the text only, and a region outside
// the picture is refused before anything is sent.
func TestAboutPictures(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("KULE_HOME", filepath.Join(dir, "kule"))
	folder := filepath.Join(dir, "folder")
	// A 40×30 picture: red on the left half, blue on the right.
	img := image.NewNRGBA(image.Rect(0, 0, 40, 30))
	for y := 0; y < 30; y++ {
		for x := 0; x < 40; x++ {
			c := color.NRGBA{255, 0, 0, 255}
			if x >= 20 {
				c = color.NRGBA{0, 0, 255, 255}
			}
			img.SetNRGBA(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(folder, "pic.png"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := kuleCLI(t, "new", folder, "--json")
	if err != nil {
		t.Fatalf("kule new: %v\n%s", err, out)
	}
	var nt struct{ ID string }
	if err := json.Unmarshal([]byte(out), &nt); err != nil {
		t.Fatalf("kule new --json: %v\n%s", err, out)
	}
	k, err := openKernel()
	if err != nil {
		t.Fatal(err)
	}
	tk, err := k.Resolve(nt.ID)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	text, pics, err := aboutPrompt(ctx, k, tk, "what is here?", []string{"pic.png:0,0-10,5", "pic.png:20,0-40,30", "pic.png:15,10-25,20", "pic.png:0,0-40,30"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1. pic.png region 0,0–10,5 (pixels)", "4. pic.png region 0,0–40,30 (pixels)"} {
		if !strings.Contains(text, want) {
			t.Errorf("the prompt does not name %q:\n%s", want, text)
		}
	}
	if len(pics) != 3 {
		t.Fatalf("%d pictures, want the first three regions", len(pics))
	}
	want := []struct {
		name      string
		w, h      int
		left, rgt color.NRGBA
	}{
		{"place 1, pic.png region 0,0–10,5 (pixels)", 10, 5, color.NRGBA{255, 0, 0, 255}, color.NRGBA{255, 0, 0, 255}},
		{"place 2, pic.png region 20,0–40,30 (pixels)", 20, 30, color.NRGBA{0, 0, 255, 255}, color.NRGBA{0, 0, 255, 255}},
		{"place 3, pic.png region 15,10–25,20 (pixels)", 10, 10, color.NRGBA{255, 0, 0, 255}, color.NRGBA{0, 0, 255, 255}},
	}
	for i, p := range pics {
		got, err := png.Decode(bytes.NewReader(p.PNG))
		if err != nil {
			t.Fatalf("picture %d: %v", i+1, err)
		}
		w := want[i]
		if p.Name != w.name || got.Bounds().Dx() != w.w || got.Bounds().Dy() != w.h {
			t.Errorf("picture %d: %q %v, want %q %d×%d", i+1, p.Name, got.Bounds(), w.name, w.w, w.h)
			continue
		}
		l := color.NRGBAModel.Convert(got.At(0, 0)).(color.NRGBA)
		r := color.NRGBAModel.Convert(got.At(w.w-1, w.h-1)).(color.NRGBA)
		if l != w.left || r != w.rgt {
			t.Errorf("picture %d: corners %v %v, want %v %v", i+1, l, r, w.left, w.rgt)
		}
	}
	if _, _, err := aboutPrompt(ctx, k, tk, "x", []string{"pic.png:30,20-41,30"}); err == nil || !strings.Contains(err.Error(), "40×30") {
		t.Errorf("a region past the picture's edge: %v, want a refusal naming its size", err)
	}
}
