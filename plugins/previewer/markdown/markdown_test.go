package markdown

import (
	"context"
	"strings"
	"testing"

	"github.com/kulehq/kule/sdk/previewer"
	"github.com/kulehq/kule/sdk/previewer/previewertest"
)

const plan = `# Plan

Some *words* and **strong** ones, ` + "`code`" + `, a [link](https://example.com).

## Later

1. first
2. second
   - inner

<script>alert("x")</script>

Inline <b onclick="x()">html</b> stays text.

| a | b |
|---|---|
| 1 | 2 |

` + "```go\nfunc f() {}\n```\n"

func TestConformance(t *testing.T) {
	previewertest.Run(t, New(), previewertest.Sample{Path: "notes/plan.md", Src: []byte(plan)})
}

func TestLayout(t *testing.T) {
	r, err := New().Preview(context.Background(), previewer.Request{Path: "plan.md", Content: []byte(plan)})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range r.Blocks {
		switch {
		case b.Heading != nil:
			got = append(got, strings.Repeat("#", b.Heading.Level)+" "+b.Heading.Text)
		case b.Paragraph != nil:
			got = append(got, b.Paragraph.Marker+"|"+b.Paragraph.Text())
		case b.Code != nil:
			got = append(got, "code "+b.Code.Language+": "+b.Code.Text)
		case b.Row != nil:
			got = append(got, "row "+strings.Join(b.Row.Cells, ","))
		}
	}
	want := []string{
		"# Plan",
		"|Some words and strong ones, code, a link.",
		"## Later",
		"1.|first",
		"2.|second",
		"•|inner",
		"code html: <script>alert(\"x\")</script>",
		"|Inline <b onclick=\"x()\">html</b> stays text.",
		"row a,b",
		"row 1,2",
		"code go: func f() {}",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("layout:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	runs := r.Blocks[1].Paragraph.Runs
	var italic, bold, code, link bool
	for _, x := range runs {
		italic = italic || (x.Italic && x.Text == "words")
		bold = bold || (x.Bold && x.Text == "strong")
		code = code || (x.Code && x.Text == "code")
		link = link || x.Link == "https://example.com"
	}
	if !italic || !bold || !code || !link {
		t.Errorf("emphasis lost: %+v", runs)
	}
}

func TestHostileMarkdown(t *testing.T) {
	for name, src := range map[string]string{
		"deep quotes": strings.Repeat(">", 50_000) + " x\n",
		"deep lists":  strings.Repeat("  ", 2000) + "- x\n",
		"many links":  strings.Repeat("[a](b)", 100_000),
		"nul":         "a\x00b",
	} {
		t.Run(name, func(t *testing.T) {
			if err := previewertest.Check(New(), "a.md", []byte(src)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func FuzzMarkdown(f *testing.F) {
	for _, s := range []string{plan, "# a\n## b\n", "> > x", "- [ ] t\n- [x] u", "<div>\nx\n</div>", "![alt](p.png)", "|a|\n|-|\n|b|"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if err := previewertest.Check(New(), "f.md", src); err != nil {
			t.Fatal(err)
		}
	})
}
