// Package termsafe makes text that came from a task safe to print on a
// terminal: a file name, an entity name, a step title or an agent's message
// could hold escape sequences (a clipboard write, cursor moves that hide the
// lines above, a changed window title) that a terminal would obey. What
// these functions return holds no C0 or C1 control byte, no DEL, no byte
// that is not UTF-8 and no invisible format character (bidirectional
// overrides); each shows as a visible escape instead (\x1b, \u009b, \u202e).
package termsafe

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Line returns s for one line of output: every control character, line
// breaks and tabs included, shows as an escape.
func Line(s string) string { return clean(s, false) }

// Text returns s for output that may span lines: line breaks and tabs stay,
// every other control character shows as an escape. A carriage return is
// escaped too: it would let a line overwrite what came before it.
func Text(s string) string { return clean(s, true) }

// Lines returns each of ss made safe by Line.
func Lines(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = Line(s)
	}
	return out
}

func clean(s string, multiline bool) string {
	if isSafe(s, multiline) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case multiline && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case safeRune(r):
			b.WriteRune(r)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += n
	}
	return b.String()
}

func isSafe(s string, multiline bool) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			return false
		}
		if !(safeRune(r) || multiline && (r == '\n' || r == '\t')) {
			return false
		}
		i += n
	}
	return true
}

// safeRune: a printable rune (strconv.IsPrint: letters, marks, numbers,
// punctuation, symbols and the ASCII space) and never a control or format
// character.
func safeRune(r rune) bool { return strconv.IsPrint(r) }
