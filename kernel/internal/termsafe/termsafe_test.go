package termsafe

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLineAndText(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ in, line, text string }{
		"plain":           {"# Title", "# Title", "# Title"},
		"unicode":         {"Überschrift — ünïcødé 日本", "Überschrift — ünïcødé 日本", "Überschrift — ünïcødé 日本"},
		"osc52 clipboard": {"# Title \x1b]52;c;Y3VybCBldmlsfHNo\a", `# Title \x1b]52;c;Y3VybCBldmlsfHNo\x07`, `# Title \x1b]52;c;Y3VybCBldmlsfHNo\x07`},
		"cursor up":       {"ok\x1b[2A\x1b[2K", `ok\x1b[2A\x1b[2K`, `ok\x1b[2A\x1b[2K`},
		"c1 csi":          {"a\u009b2Ab", `a\u009b2Ab`, `a\u009b2Ab`},
		"c1 osc":          {"a\u009d0;title\u009c", `a\u009d0;title\u009c`, `a\u009d0;title\u009c`},
		"newline":         {"a\nb", `a\x0ab`, "a\nb"},
		"tab":             {"a\tb", `a\x09b`, "a\tb"},
		"carriage return": {"fine\rEVIL", `fine\x0dEVIL`, `fine\x0dEVIL`},
		"del":             {"a\x7fb", `a\x7fb`, `a\x7fb`},
		"not utf-8":       {"a\xffb\x9b", `a\xffb\x9b`, `a\xffb\x9b`},
		"bidi override":   {"invoice\u202egpj.exe", `invoice\u202egpj.exe`, `invoice\u202egpj.exe`},
		"backslash kept":  {`C:\x1b`, `C:\x1b`, `C:\x1b`},
	} {
		if got := Line(c.in); got != c.line {
			t.Errorf("%s: Line(%q) = %q, want %q", name, c.in, got, c.line)
		}
		if got := Text(c.in); got != c.text {
			t.Errorf("%s: Text(%q) = %q, want %q", name, c.in, got, c.text)
		}
	}
}

// unsafe reports a byte a terminal would act on.
func unsafe(s string, multiline bool) (int, bool) {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			return i, true
		}
		if r < 0x20 && !(multiline && (r == '\n' || r == '\t')) || r == 0x7f || r >= 0x80 && r < 0xa0 || r == 0x202e || r == 0x202d {
			return i, true
		}
		i += n
	}
	return 0, false
}

func FuzzClean(f *testing.F) {
	for _, s := range []string{"", "# Title \x1b]52;c;AAAA\a", "a\u009b2A", "\xff\xfe", "a\r\nb", "\u202e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, x := Line(s), Text(s)
		if i, bad := unsafe(l, false); bad {
			t.Fatalf("Line(%q) = %q holds a control at %d", s, l, i)
		}
		if i, bad := unsafe(x, true); bad {
			t.Fatalf("Text(%q) = %q holds a control at %d", s, x, i)
		}
		if strings.Contains(l, "\n") {
			t.Fatalf("Line(%q) = %q breaks the line", s, l)
		}
		if Line(l) != l || Text(x) != x {
			t.Fatalf("not idempotent on %q", s)
		}
	})
}
