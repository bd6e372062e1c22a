package image

import (
	"bytes"
	"context"
	"errors"
	stdimage "image"
	"image/color"
	"image/png"
	"testing"

	"github.com/kulehq/kule/sdk/previewer"
)

// quadrants is a w×h PNG whose four quarters are red, green, blue and white
// (top left, top right, bottom left, bottom right).
func quadrants(t testing.TB, w, h int) []byte {
	img := stdimage.NewNRGBA(stdimage.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, quadrantColor(x, y, w, h))
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func quadrantColor(x, y, w, h int) color.NRGBA {
	switch {
	case x < w/2 && y < h/2:
		return color.NRGBA{255, 0, 0, 255}
	case y < h/2:
		return color.NRGBA{0, 255, 0, 255}
	case x < w/2:
		return color.NRGBA{0, 0, 255, 255}
	}
	return color.NRGBA{255, 255, 255, 255}
}

func cropOf(t *testing.T, src []byte, r previewer.Region) stdimage.Image {
	t.Helper()
	resp, err := New().Preview(context.Background(), previewer.Request{Path: "p.png", Content: src, Crop: &r})
	if err != nil {
		t.Fatal(err)
	}
	if err := previewer.Validate(resp, previewer.DefaultMaxBlocks); err != nil {
		t.Fatal(err)
	}
	out, err := png.Decode(bytes.NewReader(resp.CropPNG))
	if err != nil {
		t.Fatalf("the crop is no PNG: %v", err)
	}
	return out
}

// TestCropPixels cuts a region that straddles the four quarters and checks
// every pixel of it against the source's.
func TestCropPixels(t *testing.T) {
	const w, h = 40, 30
	src := quadrants(t, w, h)
	r := previewer.Region{X1: 12, Y1: 9, X2: 31, Y2: 22}
	out := cropOf(t, src, r)
	if b := out.Bounds(); b.Dx() != 19 || b.Dy() != 13 {
		t.Fatalf("crop of %v, want 19×13", b)
	}
	for y := 0; y < 13; y++ {
		for x := 0; x < 19; x++ {
			got := color.NRGBAModel.Convert(out.At(x, y)).(color.NRGBA)
			if want := quadrantColor(r.X1+x, r.Y1+y, w, h); got != want {
				t.Fatalf("pixel %d,%d of the crop is %v, want %v", x, y, got, want)
			}
		}
	}
}

// TestCropScalesDown: a region wider than MaxCropSide comes back fitted to
// it, its proportions and its quarters kept.
func TestCropScalesDown(t *testing.T) {
	const w, h = 3000, 1000
	src := quadrants(t, w, h)
	out := cropOf(t, src, previewer.Region{X1: 0, Y1: 0, X2: w, Y2: h})
	b := out.Bounds()
	if b.Dx() != previewer.MaxCropSide || b.Dy() != previewer.MaxCropSide/3 {
		t.Fatalf("crop of %v, want %d×%d", b, previewer.MaxCropSide, previewer.MaxCropSide/3)
	}
	corners := map[[2]int]color.NRGBA{
		{0, 0}:                   {255, 0, 0, 255},
		{b.Dx() - 1, 0}:          {0, 255, 0, 255},
		{0, b.Dy() - 1}:          {0, 0, 255, 255},
		{b.Dx() - 1, b.Dy() - 1}: {255, 255, 255, 255},
	}
	for at, want := range corners {
		if got := color.NRGBAModel.Convert(out.At(at[0], at[1])).(color.NRGBA); got != want {
			t.Errorf("pixel %v is %v, want %v", at, got, want)
		}
	}
}

// TestCropOutsideRefused: a region past the picture's edge, or empty, is
// refused with the picture's size, and no PNG is answered.
func TestCropOutsideRefused(t *testing.T) {
	src := quadrants(t, 40, 30)
	for _, r := range []previewer.Region{
		{X1: 0, Y1: 0, X2: 41, Y2: 10},
		{X1: 10, Y1: 20, X2: 20, Y2: 31},
		{X1: -1, Y1: 0, X2: 5, Y2: 5},
		{X1: 5, Y1: 5, X2: 5, Y2: 9},
	} {
		resp, err := New().Preview(context.Background(), previewer.Request{Path: "p.png", Content: src, Crop: &r})
		if !errors.Is(err, previewer.ErrCannotPreview) || len(resp.CropPNG) != 0 {
			t.Errorf("region %+v: %v, %d bytes of crop; want refused", r, err, len(resp.CropPNG))
		}
	}
	// Without the guard the cut goes ahead: the pixels past the edge come
	// out as made-up transparent ones, a region the picture does not hold.
	img, _ := png.Decode(bytes.NewReader(src))
	out := scale(img, stdimage.Rect(0, 0, 41, 10), previewer.MaxCropSide)
	if out.Bounds().Dx() != 41 || out.NRGBAAt(40, 0).A != 0 {
		t.Fatal("the unguarded cut did not read past the picture's edge")
	}
}

// TestNoCropNoPNG: a preview without Crop decodes nothing and answers none.
func TestNoCropNoPNG(t *testing.T) {
	resp, err := New().Preview(context.Background(), previewer.Request{Path: "p.png", Content: quadrants(t, 8, 8)})
	if err != nil || resp.CropPNG != nil {
		t.Fatalf("%v, %d bytes", err, len(resp.CropPNG))
	}
}

// TestValidateRefusesOversizedCrop: the host refuses a crop that says it is
// larger than MaxCropSide, or is no PNG, without decoding it.
func TestValidateRefusesOversizedCrop(t *testing.T) {
	big := quadrants(t, previewer.MaxCropSide+1, 2)
	if err := previewer.Validate(previewer.Response{Kind: "image", CropPNG: big}, 10); !errors.Is(err, previewer.ErrInvalid) {
		t.Errorf("a %d-pixel-wide crop passed: %v", previewer.MaxCropSide+1, err)
	}
	if err := previewer.Validate(previewer.Response{Kind: "image", CropPNG: []byte("GIF89a not a png at all")}, 10); !errors.Is(err, previewer.ErrInvalid) {
		t.Errorf("a GIF passed as the crop: %v", err)
	}
	if err := previewer.Validate(previewer.Response{Kind: "image", CropPNG: quadrants(t, 4, 4)}, 10); err != nil {
		t.Errorf("a small PNG was refused: %v", err)
	}
}
