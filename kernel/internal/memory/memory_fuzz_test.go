package memory

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzSearchText: whatever a person or a prompt says, the words recall and
// search make of it are a valid FTS5 query (never syntax of its own) and
// every word the query names is in the text.
func FuzzSearchText(f *testing.F) {
	for _, s := range []string{"fix the login page", `") OR * NEAR(`, "AND OR NOT", "\"quoted\" words", "café naïve 東京", "a:b c^d {x y}", "", "   ", "x\x00y", "NEAR(a b, 3)"} {
		f.Add(s)
	}
	s, err := Open(filepath.Join(f.TempDir(), File))
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	if _, err := s.StartRun(ctx, Start{Task: "t", Folder: "/f", Kind: KindAgent, Prompt: "fix the login page café 東京"}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		q, words := terms(text, 16)
		if (q == "") != (len(words) == 0) {
			t.Fatalf("query %q for words %q", q, words)
		}
		lower := strings.ToLower(text)
		for _, w := range words {
			if !strings.Contains(lower, w) || strings.ContainsAny(w, `"*():^{}`) {
				t.Fatalf("word %q of %q", w, text)
			}
		}
		if _, err := s.Search(ctx, text, 5); err != nil {
			t.Fatalf("search %q: %v", text, err)
		}
		if _, err := s.Recall(ctx, "/f", text); err != nil {
			t.Fatalf("recall %q: %v", text, err)
		}
	})
}

// FuzzSignature: the same failure with other numbers in it has the same
// signature, and a signature is always 16 hex digits.
func FuzzSignature(f *testing.F) {
	f.Add("go test ./...", "main.go:12: undefined: x", 12, 40)
	f.Add("", "", 0, 1)
	f.Add("npm test", "Error\n\n  at line 7\n", 7, 99)
	f.Fuzz(func(t *testing.T, cmd, tail string, a, b int) {
		if a < 0 || b < 0 {
			return
		}
		sig := Signature("exit", KindExec, cmd, tail+" line "+itoa(a), "")
		if len(sig) != 16 || strings.Trim(sig, "0123456789abcdef") != "" {
			t.Fatalf("signature %q", sig)
		}
		if sig != Signature("exit", KindExec, cmd, tail+" line "+itoa(b), "") {
			t.Fatalf("numbers changed the signature of %q / %q", cmd, tail)
		}
	})
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// FuzzSubject: a subject's name is kept exactly as given, or refused with
// ErrSubject; nothing else is kept.
func FuzzSubject(f *testing.F) {
	for _, s := range []string{"api.example.com:443", "[::1]:8080", ".bashrc", ".config/fish/config.fish", "", "a\nb", "\xff", "x\x00y", "'); DROP TABLE runs; --"} {
		f.Add("unknown-hosts", SubjectHost, s)
	}
	s, err := Open(filepath.Join(f.TempDir(), File))
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	id, err := s.StartRun(ctx, Start{Task: "t", Folder: "/f", Kind: KindExec, Prompt: "curl"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, rule, kind, name string) {
		u := SubjectUse{Rule: rule, Kind: kind, Subject: name, Approved: 1}
		if err := s.AddSubject(ctx, id, u); err != nil {
			if !errors.Is(err, ErrSubject) {
				t.Fatalf("%q %q %q: %v", rule, kind, name, err)
			}
			return
		}
		r, err := s.Run(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range r.Subjects {
			if x.Rule == rule && x.Kind == kind && x.Subject == name && x.Approved > 0 {
				return
			}
		}
		t.Fatalf("%q %q %q not read back: %+v", rule, kind, name, r.Subjects)
	})
}
