package differ_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/kulehq/kule/sdk/differ"
)

// keys names each "key = value" line of a .conf file.
type keys struct{}

func (keys) Name() string             { return "keys" }
func (keys) Accepts(path string) bool { return strings.HasSuffix(path, ".conf") }

// Entities reads req.Content; a field added to EntitiesRequest later does not
// change this signature.
func (keys) Entities(_ context.Context, req differ.EntitiesRequest) (differ.EntitiesResponse, error) {
	var out []differ.Entity
	off := 0
	for _, line := range strings.SplitAfter(string(req.Content), "\n") {
		if k, _, ok := strings.Cut(line, "="); ok {
			out = append(out, differ.Entity{Kind: "key", Name: strings.TrimSpace(k), Start: off, End: off + len(line)})
		}
		off += len(line)
	}
	return differ.EntitiesResponse{Entities: out}, nil
}

// Merge is the entity-by-entity merge over keys' own Entities.
func (d keys) Merge(ctx context.Context, req differ.MergeRequest) (differ.MergeResponse, error) {
	return differ.MergeEntities(ctx, differ.EntitiesOf(d, req.Path), req)
}

var (
	_ differ.Differ = keys{}
	_ differ.Merger = keys{}
)

// A differ's Merge in one line: each side changed a different key, so both
// changes go in; the same key changed on both sides is a conflict by name.
func ExampleMergeEntities() {
	ctx := context.Background()
	base := []byte("port = 80\nhost = a\n")
	r, _ := keys{}.Merge(ctx, differ.MergeRequest{
		Path:   "app.conf",
		Base:   base,
		Ours:   []byte("port = 8080\nhost = a\n"),
		Theirs: []byte("port = 80\nhost = b\n"),
	})
	fmt.Printf("%q %v\n", r.Merged, r.Conflicts)
	r, _ = keys{}.Merge(ctx, differ.MergeRequest{
		Path:   "app.conf",
		Base:   base,
		Ours:   []byte("port = 8080\nhost = a\n"),
		Theirs: []byte("port = 9090\nhost = a\n"),
	})
	fmt.Printf("%q %v\n", r.Merged, r.Conflicts)
	// Output:
	// "port = 8080\nhost = b\n" []
	// "" [both changed key port]
}
