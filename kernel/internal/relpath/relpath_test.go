package relpath

import (
	"encoding/json"
	"testing"
)

func TestPathJSONRoundTrip(t *testing.T) {
	t.Parallel()
	for name, p := range map[string]Path{
		"plain":       "notes/today.md",
		"newline":     "odd\nname.txt",
		"latin1":      Path("caf\xe9.txt"),
		"lone-cont":   Path("a/\x80b"),
		"emoji":       "photos/🌊.jpg",
		"quote-slash": `a"b\c`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			var back Path
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if back != p {
				t.Fatalf("round trip changed %q into %q (json %s)", p, back, b)
			}
		})
	}
}

func TestCheckRefusesEscapes(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"", "/etc/passwd", "../x", "a/../../x", "a//b", "a/./b", "a/", "a\x00b"} {
		if Check(p) == nil {
			t.Errorf("Check(%q) accepted a path that is not safely relative", p)
		}
	}
	for _, p := range []string{"a", "a/b", "..a", "a..", ".hidden/x", "caf\xe9"} {
		if err := Check(p); err != nil {
			t.Errorf("Check(%q) = %v, want nil", p, err)
		}
	}
}

func FuzzPathJSON(f *testing.F) {
	f.Add("notes.md")
	f.Add("caf\xe9")
	f.Add("{\"base64\":1}")
	f.Fuzz(func(t *testing.T, s string) {
		b, err := json.Marshal(Path(s))
		if err != nil {
			t.Fatal(err)
		}
		var back Path
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if string(back) != s {
			t.Fatalf("round trip changed %q into %q", s, back)
		}
		var p Path
		_ = json.Unmarshal([]byte(s), &p) // arbitrary input must not panic
	})
}
