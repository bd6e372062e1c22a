package differtest_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/kulehq/kule/sdk/differ"
	"github.com/kulehq/kule/sdk/differ/differtest"
)

// lines is a differ that names every line, and gets one thing wrong: it
// reports ranges one byte too long.
type lines struct{ offByOne bool }

func (lines) Name() string             { return "lines" }
func (lines) Accepts(path string) bool { return strings.HasSuffix(path, ".lines") }
func (l lines) Entities(_ context.Context, req differ.EntitiesRequest) (differ.EntitiesResponse, error) {
	var out []differ.Entity
	off := 0
	for i, line := range strings.SplitAfter(string(req.Content), "\n") {
		if line == "" {
			continue
		}
		end := off + len(line)
		if l.offByOne {
			end++
		}
		out = append(out, differ.Entity{Kind: "line", Name: fmt.Sprint(i + 1), Start: off, End: end})
		off += len(line)
	}
	return differ.EntitiesResponse{Entities: out}, nil
}

// Check finds the broken contract on one input; fuzz targets call it on
// every input the fuzzer makes.
func ExampleCheck() {
	src := []byte("a\nb\n")
	fmt.Println(differtest.Check(lines{}, "x.lines", src))
	fmt.Println(differtest.Check(lines{offByOne: true}, "x.lines", src))
	// Output:
	// <nil>
	// differtest: contract broken: differ: bad entities: entity 1 "line 2": range [2,5) outside the file's 4 bytes
}
