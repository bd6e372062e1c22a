package differ_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/kulehq/kule/sdk/differ"
)

// toyParse names blocks that start with "def NAME" and run until the next
// "def" line or a blank line; indented "def" lines inside a block are
// children named "PARENT.NAME". It is a stand-in for a real differ so the
// merge can be tested without a grammar.
func toyParse(_ context.Context, src []byte) ([]differ.Entity, error) {
	var out []differ.Entity
	lines := bytes.SplitAfter(src, []byte("\n"))
	pos := 0
	top := -1
	child := -1
	for _, l := range lines {
		s := string(l)
		t := strings.TrimSpace(s)
		closeChild := func() {
			if child >= 0 {
				out[child].End = pos
				child = -1
			}
		}
		switch {
		case strings.HasPrefix(s, "def "):
			closeChild()
			if top >= 0 {
				out[top].End = pos
			}
			out = append(out, differ.Entity{Kind: "def", Name: strings.TrimSpace(s[4:]), Start: pos})
			top = len(out) - 1
		case strings.HasPrefix(s, "  def ") && top >= 0:
			closeChild()
			out = append(out, differ.Entity{Kind: "def", Name: out[top].Name + "." + strings.TrimSpace(s[6:]), Start: pos, Parent: out[top].Name})
			child = len(out) - 1
		case t == "":
			closeChild()
			if top >= 0 {
				out[top].End = pos
				top = -1
			}
		}
		pos += len(l)
	}
	if child >= 0 {
		out[child].End = pos
	}
	if top >= 0 {
		out[top].End = pos
	}
	return out, nil
}

func TestMergeEntities(t *testing.T) {
	t.Parallel()
	base := "head\n\ndef a\n  x\n\ndef b\n  y\n\ndef c\n  z\n"
	tests := map[string]struct {
		ours, theirs string
		want         string
		conflicts    []string
	}{
		"disjoint edits": {
			ours:   "head\n\ndef a\n  x1\n\ndef b\n  y\n\ndef c\n  z\n",
			theirs: "head\n\ndef a\n  x\n\ndef b\n  y\n\ndef c\n  z1\n",
			want:   "head\n\ndef a\n  x1\n\ndef b\n  y\n\ndef c\n  z1\n",
		},
		"same entity on both sides even where lines do not touch": {
			ours:      "head\n\ndef a\n  x1\n  q\n\ndef b\n  y\n\ndef c\n  z\n",
			theirs:    "head\n\ndef a\n  x\n  q2\n\ndef b\n  y\n\ndef c\n  z\n",
			conflicts: []string{"both changed def a"},
		},
		"both added at one place": {
			ours:   "head\n\ndef a\n  x\n\ndef o\n  new\n\ndef b\n  y\n\ndef c\n  z\n",
			theirs: "head\n\ndef a\n  x\n\ndef t\n  new\n\ndef b\n  y\n\ndef c\n  z\n",
			want:   "head\n\ndef a\n  x\n\ndef o\n  new\n\ndef t\n  new\n\ndef b\n  y\n\ndef c\n  z\n",
		},
		"reorder on one side with an edit on the other": {
			ours:   "head\n\ndef c\n  z\n\ndef a\n  x\n\ndef b\n  y\n",
			theirs: "head\n\ndef a\n  x\n\ndef b\n  y2\n\ndef c\n  z\n",
			want:   "head\n\ndef c\n  z\n\ndef a\n  x\n\ndef b\n  y2\n",
		},
		"deleted on one side, changed on the other": {
			ours:      "head\n\ndef a\n  x\n\ndef c\n  z\n",
			theirs:    "head\n\ndef a\n  x\n\ndef b\n  y2\n\ndef c\n  z\n",
			conflicts: []string{"deleted in ours, changed in theirs: def b"},
		},
		"both deleted neighbours": {
			ours:   "head\n\ndef b\n  y\n\ndef c\n  z\n",
			theirs: "head\n\ndef a\n  x\n\ndef c\n  z\n",
			want:   "head\n\ndef c\n  z\n",
		},
		"moved to different places": {
			ours:      "head\n\ndef b\n  y\n\ndef a\n  x\n\ndef c\n  z\n",
			theirs:    "head\n\ndef b\n  y\n\ndef c\n  z\n\ndef a\n  x\n",
			conflicts: []string{"x"},
		},
		"top-level glue on both sides": {
			ours:      "head1\n\ndef a\n  x\n\ndef b\n  y\n\ndef c\n  z\n",
			theirs:    "head2\n\ndef a\n  x\n\ndef b\n  y\n\ndef c\n  z\n",
			conflicts: []string{"top level"},
		},
		"nested children merge": {
			ours:   "head\n\ndef a\n  x\n  def m\n    1\n  def n\n    2\n\ndef b\n  y\n\ndef c\n  z\n",
			theirs: "head\n\ndef a\n  x\n  def m\n    1\n  def n\n    3\n\ndef b\n  y\n\ndef c\n  z\n",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := base
			if name == "nested children merge" {
				b = "head\n\ndef a\n  x\n  def m\n    0\n  def n\n    2\n\ndef b\n  y\n\ndef c\n  z\n"
				tc.want = "head\n\ndef a\n  x\n  def m\n    1\n  def n\n    3\n\ndef b\n  y\n\ndef c\n  z\n"
			}
			res, err := differ.MergeEntities(context.Background(), toyParse, differ.MergeRequest{Base: []byte(b), Ours: []byte(tc.ours), Theirs: []byte(tc.theirs)})
			if err != nil {
				t.Fatal(err)
			}
			if tc.conflicts != nil {
				if len(res.Conflicts) == 0 || res.Merged != nil {
					t.Fatalf("want conflicts %q, merged:\n%s", tc.conflicts, res.Merged)
				}
				if tc.conflicts[0] != "x" && strings.Join(res.Conflicts, "|") != strings.Join(tc.conflicts, "|") {
					t.Fatalf("conflicts = %q, want %q", res.Conflicts, tc.conflicts)
				}
				return
			}
			if len(res.Conflicts) > 0 {
				t.Fatalf("unexpected conflicts %q", res.Conflicts)
			}
			if string(res.Merged) != tc.want {
				t.Fatalf("merged:\n%s\nwant:\n%s", res.Merged, tc.want)
			}
		})
	}
}
