package ooxml

import (
	"errors"
	"strings"
	"testing"

	"github.com/kulehq/kule/sdk/previewer"
)

// A part that inflates past its cap: with the cap, refused before more than
// the cap is inflated; without it, the whole bomb is inflated.
func TestZipBomb(t *testing.T) {
	const part, total = 1 << 20, 3 << 20
	defer SmallCapsForTest(part, total)()
	bomb := Build(Part{Name: "word/document.xml", Zeros: 8 * part})
	if len(bomb) > part/64 {
		t.Fatalf("the bomb is %d bytes: not a bomb", len(bomb))
	}
	t.Run("guard-off", func(t *testing.T) {
		defer CapsOffForTest()()
		p, err := Open(bomb, "Word")
		if err != nil || p.Inflated <= part {
			t.Fatalf("without the caps the bomb was not inflated past the cap (%v, %d bytes): the guarded run proves nothing", err, p.Inflated)
		}
	})
	t.Run("guard-on", func(t *testing.T) {
		_, err := Open(bomb, "Word")
		if !errors.Is(err, previewer.ErrCannotPreview) || !strings.Contains(err.Error(), "zip bomb") {
			t.Fatalf("got %v, want a refusal naming a zip bomb", err)
		}
	})
	t.Run("many parts in all", func(t *testing.T) {
		var parts []Part
		for i := 0; i < total/part+2; i++ {
			parts = append(parts, Part{Name: "p" + strings.Repeat("x", i) + ".bin", Zeros: part - 1})
		}
		if _, err := Open(Build(parts...), "Excel"); !errors.Is(err, previewer.ErrCannotPreview) || !strings.Contains(err.Error(), "in all") {
			t.Fatalf("got %v", err)
		}
	})
}

func TestRefusals(t *testing.T) {
	ok := Build(Part{Name: "a.xml", Data: []byte("<a/>")})
	for name, tc := range map[string]struct {
		data []byte
		says string
	}{
		"png that is a zip": {append([]byte("\x89PNG\r\n\x1a\n"), ok...), "does not start as a ZIP"},
		"truncated":         {ok[:len(ok)-10], "damaged or truncated"},
		"entities":          {Build(Part{Name: "a.xml", Data: []byte(`<!DOCTYPE a [<!ENTITY x "y">]><a>&x;</a>`)}), "entities"},
		"external entity":   {Build(Part{Name: "b.rels", Data: []byte(`<?xml version="1.0"?><!DOCTYPE r [<!ENTITY e SYSTEM "file:///etc/passwd">]><r>&e;</r>`)}), "document type"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Open(tc.data, "Excel"); !errors.Is(err, previewer.ErrCannotPreview) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("got %v, want a refusal saying %q", err, tc.says)
			}
		})
	}
	p, err := Open(ok, "Excel")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := p.Part("a.xml"); err != nil || string(b) != "<a/>" {
		t.Fatalf("Part = %q, %v", b, err)
	}
	if _, err := p.Part("nosuch"); !errors.Is(err, ErrNoPart) {
		t.Fatalf("Part of a missing part = %v", err)
	}
}

func FuzzOpen(f *testing.F) {
	f.Add(Build(Part{Name: "a.xml", Data: []byte("<a/>")}))
	f.Add([]byte("PK\x03\x04"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Open(data, "Excel")
		if err != nil {
			if !errors.Is(err, previewer.ErrCannotPreview) {
				t.Fatalf("an error that is not a refusal: %v", err)
			}
			return
		}
		for _, n := range p.Names() {
			if b, err := p.Part(n); err == nil && len(b) > MaxPart {
				t.Fatalf("part %s of %d bytes", n, len(b))
			}
		}
	})
}
