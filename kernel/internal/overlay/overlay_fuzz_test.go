package overlay

import (
	"testing"

	"github.com/kulehq/kule/kernel/internal/relpath"
)

// FuzzParseRedirect: whatever a command left in a redirect xattr, the path
// it names is a clean path inside the layer, or it is refused.
func FuzzParseRedirect(f *testing.F) {
	for _, s := range []string{"/a/b", "c", "..", "/../x", "a/b", "", "/", "//", "/a\x00b", "/é/ü"} {
		f.Add("d/e", s)
	}
	f.Fuzz(func(t *testing.T, dir, value string) {
		if relpath.Check(dir) != nil {
			return
		}
		from, err := ParseRedirect(dir, value)
		if err != nil {
			return
		}
		if err := relpath.Check(from); err != nil {
			t.Fatalf("ParseRedirect(%q, %q) = %q, which leaves the layer: %v", dir, value, from, err)
		}
	})
}

// FuzzKernelVersion: any release string reads as a version or as 0.0,
// never as a negative one and never with a panic.
func FuzzKernelVersion(f *testing.F) {
	for _, s := range []string{"6.18.44-fc-v1098", "5.10.0-28-amd64", "6.8", "", ".", "6.", "x.y", "99999999999999999999.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rel string) {
		if a, b := kernelVersion(rel); a < 0 || b < 0 {
			t.Fatalf("kernelVersion(%q) = %d.%d", rel, a, b)
		}
	})
}
