package treesit

import (
	"fmt"
	"strings"
	"testing"
	"time"

	sitter "github.com/tree-sitter/go-tree-sitter"
	tsrust "github.com/tree-sitter/tree-sitter-rust/bindings/go"
)

// BenchmarkAllocator parses a 5,000-line Rust file with tree-sitter's
// default allocator (what Parse uses) and, as the peer, with the Go
// binding's allocator, which calls back into Go for every malloc. The two
// run interleaved.
func BenchmarkAllocator(b *testing.B) {
	var sb strings.Builder
	for i := 0; strings.Count(sb.String(), "\n") < 5000; i++ {
		fmt.Fprintf(&sb, "/// Item.\n#[derive(Debug)]\npub struct Item%[1]d { id: u64 }\n\nimpl Item%[1]d {\n    pub fn new(id: u64) -> Self {\n        Self { id }\n    }\n}\n\n", i)
	}
	src := []byte(sb.String())
	lang := sitter.NewLanguage(tsrust.Language())
	parse := func() time.Duration {
		t0 := time.Now()
		p := sitter.NewParser()
		_ = p.SetLanguage(lang)
		p.Parse(src, nil).Close()
		p.Close()
		return time.Since(t0)
	}
	defer libcAllocator()
	var libc, binding time.Duration
	for b.Loop() {
		sitter.SetAllocator(nil, nil, nil, nil) // the binding's round trip
		binding += parse()
		libcAllocator()
		libc += parse()
	}
	n := float64(b.N)
	b.ReportMetric(float64(libc.Nanoseconds())/n/1e6, "libc-ms/file")
	b.ReportMetric(float64(binding.Nanoseconds())/n/1e6, "binding-ms/file")
	b.ReportMetric(float64(binding)/float64(libc), "x-faster")
}
