package image

import (
	"context"
	"testing"

	"github.com/kulehq/kule/sdk/previewer"
)

// BenchmarkCrop cuts a whole 4000×3000 picture (scaled down to fit
// MaxCropSide) and a 200×200 region of it: what a picture place costs the
// previewer's process.
func BenchmarkCrop(b *testing.B) {
	src := quadrants(b, 4000, 3000)
	for name, r := range map[string]previewer.Region{
		"whole":   {X1: 0, Y1: 0, X2: 4000, Y2: 3000},
		"200x200": {X1: 1900, Y1: 1400, X2: 2100, Y2: 1600},
	} {
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := New().Preview(context.Background(), previewer.Request{Path: "p.png", Content: src, Crop: &r}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
