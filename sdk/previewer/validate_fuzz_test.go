package previewer

import "testing"

// FuzzCheckCropPNG: the host's look at a crop's header never panics and
// passes nothing larger than MaxCropBytes.
func FuzzCheckCropPNG(f *testing.F) {
	f.Add([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x00\x00\x00\x00"))
	f.Add([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xff\xff\xff\x00\x00\x00\x01"))
	f.Add([]byte("GIF89a"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if checkCropPNG(b) == nil && (len(b) > MaxCropBytes || len(b) < 24) {
			t.Fatalf("%d bytes passed", len(b))
		}
	})
}
