package previewer_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/kulehq/kule/sdk/previewer"
)

// lines is a previewer that numbers the lines of *.note files.
type lines struct{}

func (lines) Name() string          { return "lines" }
func (lines) Accepts(p string) bool { return strings.HasSuffix(p, ".note") }
func (lines) Preview(_ context.Context, req previewer.Request) (previewer.Response, error) {
	if strings.ContainsRune(string(req.Content), 0) {
		return previewer.Response{}, fmt.Errorf("%w: binary content", previewer.ErrCannotPreview)
	}
	r := previewer.Response{Kind: previewer.KindText}
	for i, l := range strings.Split(strings.TrimSuffix(string(req.Content), "\n"), "\n") {
		if i == req.Limit() {
			r.Truncated = true
			break
		}
		r.Blocks = append(r.Blocks, previewer.Block{Line: &previewer.Line{Number: i + 1, Text: l}})
	}
	return r, nil
}

func Example() {
	r, _ := lines{}.Preview(context.Background(), previewer.Request{Path: "a.note", Content: []byte("one\ntwo\n")})
	fmt.Println(previewer.Validate(r, previewer.DefaultMaxBlocks), len(r.Blocks), r.Blocks[1].Line.Text)
	// Output: <nil> 2 two
}
