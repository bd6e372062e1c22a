package text

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/kulehq/kule/sdk/plugin"
	"github.com/kulehq/kule/sdk/previewer"
)

// BenchmarkText1MB previews a 1 MB Go-like file through the plugin wire
// (gRPC; the process boundary's own cost is BenchmarkPreviewerCall in
// kernel/internal/pluginhost) against the named peer, `cat -n` numbering
// the same file, in one loop. Goal: under 100 ms.
func BenchmarkText1MB(b *testing.B) {
	var sb strings.Builder
	for i := 0; sb.Len() < 1<<20; i++ {
		fmt.Fprintf(&sb, "\tx%05d := compute(a, b, \"some words of a line\") // comment %d\n", i, i)
	}
	src := []byte(sb.String())
	file := filepath.Join(b.TempDir(), "big.go")
	if err := os.WriteFile(file, src, 0o644); err != nil {
		b.Fatal(err)
	}
	client, server := goplugin.TestPluginGRPCConn(b, false, map[string]goplugin.Plugin{plugin.KindPreviewer: &plugin.PreviewerPlugin{Impl: New()}})
	defer client.Close()
	defer server.Stop()
	raw, err := client.Dispense(plugin.KindPreviewer)
	if err != nil {
		b.Fatal(err)
	}
	c := raw.(*plugin.PreviewerClient)
	ctx := context.Background()
	b.ResetTimer()
	var kule, peer time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		r, err := c.Preview(ctx, previewer.Request{Path: "big.go", Content: src})
		if err != nil || len(r.Blocks) < 10_000 {
			b.Fatalf("preview: %v, %d lines", err, len(r.Blocks))
		}
		t1 := time.Now()
		if out, err := exec.Command("cat", "-n", file).Output(); err != nil || len(out) < len(src) {
			b.Fatalf("cat -n: %v", err)
		}
		peer += time.Since(t1)
		kule += t1.Sub(t0)
	}
	n := float64(b.N)
	b.ReportMetric(kule.Seconds()*1000/n, "ms-kule/preview")
	b.ReportMetric(peer.Seconds()*1000/n, "ms-cat-n/file")
	b.ReportMetric(float64(kule)/float64(peer), "ratio-kule/cat-n")
}
