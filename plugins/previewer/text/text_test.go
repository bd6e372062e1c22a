package text

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kulehq/kule/sdk/previewer"
	"github.com/kulehq/kule/sdk/previewer/previewertest"
)

func preview(t testing.TB, path, src string, format bool) (previewer.Response, error) {
	t.Helper()
	return New().Preview(context.Background(), previewer.Request{Path: path, Content: []byte(src), Format: format})
}

func TestConformance(t *testing.T) {
	previewertest.Run(t, New(),
		previewertest.Sample{Path: "main.go", Src: []byte("package main\n\nfunc main() {}\n")},
		previewertest.Sample{Path: "d.json", Src: []byte(`{"a":[1,2,{"b":3}]}`)},
		previewertest.Sample{Path: "notes.txt", Src: []byte("one\r\ntwo\nthree")},
	)
}

func TestLinesAndLanguage(t *testing.T) {
	r, err := preview(t, "src/main.go", "package main\r\n\nfunc main() {}\n", false)
	if err != nil {
		t.Fatal(err)
	}
	if r.Language != "go" || r.Kind != previewer.KindText || len(r.Blocks) != 3 {
		t.Fatalf("got %+v", r)
	}
	if l := r.Blocks[2].Line; l.Number != 3 || l.Text != "func main() {}" {
		t.Errorf("line 3 = %+v", l)
	}
	if r.Blocks[0].Line.Text != "package main" {
		t.Errorf("a CR stayed: %q", r.Blocks[0].Line.Text)
	}
}

func TestFormatOnRequest(t *testing.T) {
	packed := `{"name":"kule","tags":["a","b"],"n":{"x":1}}`
	r, _ := preview(t, "a.json", packed, false)
	if len(r.Blocks) != 1 {
		t.Fatalf("unasked, JSON was laid out: %d lines", len(r.Blocks))
	}
	r, err := preview(t, "a.json", packed, true)
	if err != nil || len(r.Blocks) < 8 || r.Blocks[1].Line.Text != `  "name": "kule",` {
		t.Fatalf("formatted JSON = %+v, %v", r.Blocks, err)
	}
	r, err = preview(t, "a.xml", `<a><w:b x="1">t</w:b><c/></a>`, true)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range r.Blocks {
		got = append(got, b.Line.Text)
	}
	if want := "<a>|  <w:b x=\"1\">|    t|  </w:b>|  <c/>|</a>"; strings.Join(got, "|") != want {
		t.Errorf("formatted XML = %q, want %q", strings.Join(got, "|"), want)
	}
	big := "[" + strings.Repeat("1,", MaxFormat/2) + "1]"
	r, _ = preview(t, "big.json", big, true)
	if len(r.Blocks) != 1 || !strings.Contains(strings.Join(r.Notes, " "), "larger than") {
		t.Errorf("a JSON file over 1 MB was laid out, or the note is missing: %v", r.Notes)
	}
}

// TestHostileText: each hostile file is refused or shown safely, with a
// reason a person reads.
func TestHostileText(t *testing.T) {
	entity := `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]><lolz>&lol2;</lolz>`
	external := `<?xml version="1.0"?><!DOCTYPE foo [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><foo>&xxe;</foo>`
	tests := map[string]struct {
		path, src string
		format    bool
		refused   string // part of the refusal; "" when shown
		check     func(t *testing.T, r previewer.Response)
	}{
		"binary named .txt": {path: "a.txt", src: "\x7fELF\x02\x01\x01\x00\x00\x00", refused: "binary content"},
		"mostly not utf-8":  {path: "a.txt", src: strings.Repeat("\xfa\xfb\xfc", 100), refused: "not UTF-8"},
		"latin-1 text": {path: "a.txt", src: "caf\xe9 cr\xe8me\n", check: func(t *testing.T, r previewer.Response) {
			if r.Blocks[0].Line.Text != "caf\uFFFD cr\uFFFDme" || len(r.Notes) == 0 {
				t.Errorf("got %q, notes %v", r.Blocks[0].Line.Text, r.Notes)
			}
		}},
		"utf-16": {path: "a.txt", src: "\xff\xfeh\x00i\x00", check: func(t *testing.T, r previewer.Response) {
			if r.Blocks[0].Line.Text != "hi" {
				t.Errorf("got %q", r.Blocks[0].Line.Text)
			}
		}},
		"one huge line": {path: "a.txt", src: strings.Repeat("é", MaxLine), check: func(t *testing.T, r previewer.Response) {
			if l := r.Blocks[0].Line.Text; len(l) > MaxLine+4 || !strings.HasSuffix(l, "…") {
				t.Errorf("line of %d bytes shown", len(l))
			}
		}},
		"entity expansion": {path: "a.xml", src: entity, format: true, check: func(t *testing.T, r previewer.Response) {
			all := ""
			for _, b := range r.Blocks {
				all += b.Line.Text
			}
			if strings.Contains(all, "lollol") || !strings.Contains(strings.Join(r.Notes, " "), "not formatted") {
				t.Errorf("an entity was expanded or the refusal is unsaid: %q %v", all, r.Notes)
			}
		}},
		"external entity": {path: "a.xml", src: external, format: true, check: func(t *testing.T, r previewer.Response) {
			for _, b := range r.Blocks {
				if strings.Contains(b.Line.Text, "root:") {
					t.Fatal("an external entity was read")
				}
			}
		}},
		"million lines": {path: "a.txt", src: strings.Repeat("\n", 1_000_000), check: func(t *testing.T, r previewer.Response) {
			if len(r.Blocks) != previewer.DefaultMaxBlocks || !r.Truncated {
				t.Errorf("%d lines, truncated %v", len(r.Blocks), r.Truncated)
			}
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r, err := preview(t, tc.path, tc.src, tc.format)
			if tc.refused != "" {
				if !errors.Is(err, previewer.ErrCannotPreview) || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("got %v, want a refusal saying %q", err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := previewer.Validate(r, previewer.DefaultMaxBlocks); err != nil {
				t.Fatal(err)
			}
			tc.check(t, r)
		})
	}
}

func FuzzText(f *testing.F) {
	for _, s := range []string{"", "a\nb\r\n", "\xff\xfeh\x00", "\xef\xbb\xbfx", "caf\xe9", `{"a":1}`, `<a><b/></a>`, "<!DOCTYPE x [<!ENTITY a 'b'>]><x>&a;</x>"} {
		f.Add("a.json", []byte(s), true)
		f.Add("a.xml", []byte(s), true)
		f.Add("a.txt", []byte(s), false)
	}
	f.Fuzz(func(t *testing.T, path string, src []byte, format bool) {
		if err := previewertest.Check(New(), path, src); err != nil {
			t.Fatal(err)
		}
		if r, err := New().Preview(context.Background(), previewer.Request{Path: path, Content: src, Format: format}); err == nil {
			if err := previewer.Validate(r, previewer.DefaultMaxBlocks); err != nil {
				t.Fatal(err)
			}
		}
	})
}
