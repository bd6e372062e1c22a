package extension

import (
	"bytes"
	"testing"
)

// FuzzReadPackage: whatever the bytes, ReadPackage never panics, and a
// package it accepts holds only clean paths, within the caps, with a
// manifest that parses again to the same id and version, and packs' sha256
// is of the bytes given.
func FuzzReadPackage(f *testing.F) {
	f.Add(zipOf(f, goodEntries()...))
	f.Add(zipOf(f, append(goodEntries(), entry{name: "../x", body: "x"})...))
	f.Add([]byte("PK\x05\x06" + string(make([]byte, 18))))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ReadPackage(data)
		if err != nil {
			return
		}
		var total int
		for name, b := range p.Files {
			if CheckPath(name) != nil {
				t.Fatalf("accepted path %q", name)
			}
			if len(b) > MaxFileSize {
				t.Fatalf("%q is %d bytes", name, len(b))
			}
			total += len(b)
		}
		if total > MaxTotalSize {
			t.Fatalf("total %d", total)
		}
		m, err := ParseManifest(p.Files[ManifestName])
		if err != nil || m.ID != p.Manifest.ID || m.Version != p.Manifest.Version {
			t.Fatalf("manifest does not parse again: %v", err)
		}
		q, err := ReadPackage(bytes.Clone(data))
		if err != nil || q.SHA256 != p.SHA256 {
			t.Fatal("not deterministic")
		}
	})
}

// FuzzParseManifest: an accepted manifest asks only for known permissions,
// and every contribution it makes has its permission.
func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(goodManifest))
	f.Add([]byte(`{"id":"a.b","name":"x","version":"1.0.0","permissions":["secrets"]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest(data)
		if err != nil {
			return
		}
		for _, p := range m.Permissions {
			if p.Describe() == "" {
				t.Fatalf("unknown permission %q accepted", p)
			}
		}
		if len(m.Commands) > 0 && !m.Has(PermCommands) || len(m.Panels) > 0 && !m.Has(PermPanels) {
			t.Fatal("contribution without its permission")
		}
	})
}

// FuzzParseTheme: an accepted theme has only known parts and #rrggbb colours.
func FuzzParseTheme(f *testing.F) {
	f.Add([]byte(goodTheme))
	f.Add([]byte(`{"name":"x","colors":{"bg":"url(x)"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		th, err := ParseTheme(data)
		if err != nil {
			return
		}
		for part, c := range th.Colors {
			if !isHexColor(c) {
				t.Fatalf("%s = %q", part, c)
			}
		}
	})
}
