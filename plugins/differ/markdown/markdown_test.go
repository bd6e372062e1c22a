package markdown_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/kulehq/kule/plugins/differ/internal/difftest"
	"github.com/kulehq/kule/plugins/differ/markdown"
	"github.com/kulehq/kule/sdk/differ"
)

func TestGolden(t *testing.T) { difftest.Golden(t, markdown.New(), "testdata") }

func TestConformance(t *testing.T) { difftest.Conformance(t, markdown.New(), "testdata") }

func TestMerge(t *testing.T) { difftest.Merge(t, markdown.New(), "testdata", ".md") }

func TestAccepts(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]bool{"README.md": true, "docs/a.MARKDOWN": true, "notes.txt": false, "a.mdx": true} {
		if got := markdown.New().Accepts(path); got != want {
			t.Errorf("Accepts(%q) = %v, want %v", path, got, want)
		}
	}
}

func FuzzEntities(f *testing.F) { difftest.FuzzEntities(f, markdown.New(), ".md", "testdata") }

func FuzzMerge(f *testing.F) { difftest.FuzzMerge(f, markdown.New(), ".md", "testdata") }

// generated is a Markdown document of about n lines with nested sections,
// lists and code blocks.
func generated(n int) []byte {
	var b strings.Builder
	for i := 0; strings.Count(b.String(), "\n") < n; i++ {
		fmt.Fprintf(&b, "# Chapter %[1]d\n\nIntro to chapter %[1]d.\n\n## Setup %[1]d\n\n- one\n- two\n\n```sh\n# a comment\nmake %[1]d\n```\n\n## Notes %[1]d\n\nSome *text* with `code`.\n\n### Detail %[1]d\n\nMore text.\n\n", i)
	}
	return []byte(b.String())
}

func BenchmarkEntities5000Lines(b *testing.B) {
	src := generated(5000)
	d := markdown.New()
	ctx := context.Background()
	difftest.Compare(b, func() {
		if _, err := d.Entities(ctx, differ.EntitiesRequest{Path: "gen.md", Content: src}); err != nil {
			b.Fatal(err)
		}
	}, "line-split", func() {
		_ = bytes.Split(src, []byte("\n"))
	})
}
