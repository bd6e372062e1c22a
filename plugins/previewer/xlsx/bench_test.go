package xlsx

import (
	"bytes"
	"context"
	"testing"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"github.com/xuri/excelize/v2"

	"github.com/kulehq/kule/sdk/plugin"
	"github.com/kulehq/kule/sdk/previewer"
)

// BenchmarkSheet10000Cells previews a workbook of 100×100 cells (a tenth of
// them formulas) through the plugin wire against the named peer, excelize
// reading the same workbook's rows alone, in one loop. Goal: under 200 ms.
func BenchmarkSheet10000Cells(b *testing.B) {
	f := excelize.NewFile()
	for r := 1; r <= 100; r++ {
		row := make([]any, 100)
		for c := range row {
			row[c] = r*1000 + c
		}
		cell, _ := excelize.CoordinatesToCellName(1, r)
		if err := f.SetSheetRow("Sheet1", cell, &row); err != nil {
			b.Fatal(err)
		}
		for c := 1; c <= 10; c++ {
			name, _ := excelize.CoordinatesToCellName(c*10, r)
			if err := f.SetCellFormula("Sheet1", name, "SUM(A1:B2)"); err != nil {
				b.Fatal(err)
			}
		}
	}
	buf, err := f.WriteToBuffer()
	if err != nil {
		b.Fatal(err)
	}
	src := buf.Bytes()
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
		r, err := c.Preview(ctx, previewer.Request{Path: "big.xlsx", Content: src})
		if err != nil || len(r.Blocks) != 100 || r.Blocks[0].Row.Formulas[9] == "" {
			b.Fatalf("preview: %v, %d rows", err, len(r.Blocks))
		}
		t1 := time.Now()
		pf, err := excelize.OpenReader(bytes.NewReader(src))
		if err != nil {
			b.Fatal(err)
		}
		if rows, err := pf.GetRows("Sheet1"); err != nil || len(rows) != 100 {
			b.Fatal(err)
		}
		pf.Close()
		peer += time.Since(t1)
		kule += t1.Sub(t0)
	}
	n := float64(b.N)
	b.ReportMetric(kule.Seconds()*1000/n, "ms-kule/preview")
	b.ReportMetric(peer.Seconds()*1000/n, "ms-excelize-rows/file")
	b.ReportMetric(float64(kule)/float64(peer), "ratio-kule/excelize")
}
