package host

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/dop251/goja"

	"github.com/kulehq/kule/sdk/extension"
)

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkRuntimeMemory measures what one extension's runtime holds once
// loaded (the todo-notes example: its event loop, the SDK and its hook),
// against its peer, a bare goja runtime, and reports both in MiB and their
// ratio. Each iteration loads 20 runtimes and keeps them alive while the
// heap is read.
func BenchmarkRuntimeMemory(b *testing.B) {
	_, pkg, err := extension.Pack(filepath.Join("..", "examples", "todo-notes"))
	if err != nil {
		b.Fatal(err)
	}
	const n = 20
	var ours, bare float64
	for i := 0; i < b.N; i++ {
		before := liveHeap()
		h := New(nil)
		for j := 0; j < n; j++ {
			id := "me.r" + string(rune('a'+j))
			if _, err := h.Load(context.Background(), extension.LoadRequest{Extension: id, Version: "0.1.0", Files: pkg.Files, Main: pkg.Manifest.Main,
				Settings: []byte(`{"marker":"TODO"}`), CallTimeoutMS: 10000}, noBridge); err != nil {
				b.Fatal(err)
			}
		}
		after := liveHeap()
		ours += float64(after-before) / n / (1 << 20)
		runtime.KeepAlive(h)
		for _, r := range h.rts {
			r.stop()
		}

		before = liveHeap()
		vms := make([]*goja.Runtime, n)
		for j := range vms {
			vms[j] = goja.New()
		}
		after = liveHeap()
		bare += float64(after-before) / n / (1 << 20)
		runtime.KeepAlive(vms)
	}
	b.ReportMetric(ours/float64(b.N), "MiB/runtime")
	b.ReportMetric(bare/float64(b.N), "MiB/bare-goja")
	b.ReportMetric(ours/bare, "ratio")
}
