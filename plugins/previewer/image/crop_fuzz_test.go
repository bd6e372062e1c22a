package image

import (
	"context"
	"errors"
	"testing"

	"github.com/kulehq/kule/sdk/previewer"
)

// FuzzCrop: any bytes and any region either answer a PNG the host accepts
// or a refusal; nothing panics.
func FuzzCrop(f *testing.F) {
	f.Add(pngOf(f, 3, 2), 0, 0, 2, 2)
	f.Add(jpegOf(f), 1, 1, 16, 8)
	f.Add(gifOf(f, 2), 0, 0, 4, 3)
	f.Add(webp1x1, 0, 0, 1, 1)
	f.Add(pngOf(f, 3, 2), -1, 0, 4, 2)
	f.Fuzz(func(t *testing.T, src []byte, x1, y1, x2, y2 int) {
		r := previewer.Region{X1: x1, Y1: y1, X2: x2, Y2: y2}
		resp, err := New().Preview(context.Background(), previewer.Request{Path: "a.png", Content: src, Crop: &r})
		if err != nil {
			if !errors.Is(err, previewer.ErrCannotPreview) {
				t.Fatalf("an error that is no refusal: %v", err)
			}
			return
		}
		if len(resp.CropPNG) == 0 {
			t.Fatal("a crop asked for and none answered")
		}
		if err := previewer.Validate(resp, previewer.DefaultMaxBlocks); err != nil {
			t.Fatal(err)
		}
	})
}
