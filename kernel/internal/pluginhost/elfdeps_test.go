package pluginhost

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStartReads: the kule test binary (cgo, dynamically linked) needs its
// interpreter and libc; a script or garbage needs nothing read for it.
func TestStartReads(t *testing.T) {
	f, err := os.Open(selfExe(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := startReads(f)
	if err != nil {
		t.Fatal(err)
	}
	interp, needed, _ := elfLinks(f)
	if interp == "" && len(needed) == 0 {
		if len(got) != 0 {
			t.Fatalf("a static binary needs nothing, got %v", got)
		}
		return
	}
	joined := strings.Join(got, " ")
	for _, want := range []string{"ld-linux", "libc.so", "/etc/ld.so.cache"} {
		if !strings.Contains(joined, want) {
			t.Errorf("startReads = %v, want one with %q", got, want)
		}
	}
	for _, p := range got {
		if !filepath.IsAbs(p) {
			t.Errorf("%q is not absolute", p)
		}
	}
	for _, src := range [][]byte{[]byte("#!/bin/sh\necho hi\n"), nil, []byte("\x7fELF garbage")} {
		if got, err := startReads(bytes.NewReader(src)); err != nil || len(got) != 0 {
			t.Errorf("startReads(%q) = %v, %v; want nothing", src, got, err)
		}
	}
}

// FuzzStartReads: the ELF headers of an unapproved-looking executable are
// read by the kernel before it runs; no input may panic or hang it, and
// whatever it lists is an absolute path.
func FuzzStartReads(f *testing.F) {
	if b, err := os.ReadFile("/bin/true"); err == nil {
		f.Add(b[:min(len(b), 8192)])
	}
	f.Add([]byte("\x7fELF\x02\x01\x01"))
	f.Add([]byte("#!/bin/sh\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, _ := startReads(bytes.NewReader(b))
		for _, p := range got {
			if !filepath.IsAbs(p) {
				t.Fatalf("%q is not absolute", p)
			}
		}
	})
}
