package xlsx

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/xuri/excelize/v2"

	"github.com/kulehq/kule/plugins/previewer/internal/ooxml"
	"github.com/kulehq/kule/sdk/previewer"
	"github.com/kulehq/kule/sdk/previewer/previewertest"
)

// Budget is a small workbook of two sheets, with formulas.
func Budget(t testing.TB) []byte {
	f := excelize.NewFile()
	defer f.Close()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(f.SetSheetRow("Sheet1", "A1", &[]any{"item", "cost"}))
	must(f.SetSheetRow("Sheet1", "A2", &[]any{"rent", 1200}))
	must(f.SetSheetRow("Sheet1", "A3", &[]any{"food", 300}))
	must(f.SetCellValue("Sheet1", "A5", "total"))
	must(f.SetCellValue("Sheet1", "B5", 1500))
	must(f.SetCellFormula("Sheet1", "B5", "SUM(B2:B3)"))
	_, err := f.NewSheet("Later")
	must(err)
	must(f.SetCellValue("Later", "C2", "party"))
	buf, err := f.WriteToBuffer()
	must(err)
	return buf.Bytes()
}

func TestConformance(t *testing.T) {
	previewertest.Run(t, New(), previewertest.Sample{Path: "budget.xlsx", Src: Budget(t)})
}

func TestSheetsFromA1(t *testing.T) {
	r, err := New().Preview(context.Background(), previewer.Request{Path: "budget.xlsx", Content: Budget(t)})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range r.Blocks {
		line := b.Row.Sheet + "!" + strings.Join(b.Row.Cells, ",")
		if b.Row.Formulas != nil {
			line += " =" + strings.Join(b.Row.Formulas, ",")
		}
		got = append(got, line)
		_ = b.Row.Number
	}
	want := "Sheet1!item,cost|Sheet1!rent,1200|Sheet1!food,300|Sheet1!total,1500 =,SUM(B2:B3)|Later!,,party"
	if strings.Join(got, "|") != want {
		t.Errorf("got  %s\nwant %s", strings.Join(got, "|"), want)
	}
	if r.Blocks[3].Row.Number != 5 || r.Blocks[4].Row.Number != 2 {
		t.Errorf("row numbers: %d, %d", r.Blocks[3].Row.Number, r.Blocks[4].Row.Number)
	}
}

func TestHostileWorkbooks(t *testing.T) {
	good := Budget(t)
	sheetWith := func(body string) []byte {
		return ooxml.Build(
			ooxml.Part{Name: "[Content_Types].xml", Data: []byte(`<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`)},
			ooxml.Part{Name: "xl/workbook.xml", Data: []byte(body)},
		)
	}
	for name, tc := range map[string]struct {
		data []byte
		says string
	}{
		"zip bomb":          {ooxml.Build(ooxml.Part{Name: "xl/workbook.xml", Zeros: ooxml.MaxPart + 1}), "zip bomb"},
		"entity expansion":  {sheetWith(`<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]><workbook>&b;</workbook>`), "entities"},
		"external entity":   {sheetWith(`<?xml version="1.0"?><!DOCTYPE l [<!ENTITY x SYSTEM "file:///etc/passwd">]><workbook>&x;</workbook>`), "document type"},
		"truncated":         {good[:len(good)/2], "truncated"},
		"png that is a zip": {append([]byte("\x89PNG\r\n\x1a\n"), good...), "does not start as a ZIP"},
		"not a workbook":    {ooxml.Build(ooxml.Part{Name: "word/document.xml", Data: []byte("<a/>")}), "not an Excel workbook"},
		"text named xlsx":   {[]byte("item,cost\n"), "does not start as a ZIP"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := New().Preview(context.Background(), previewer.Request{Path: "a.xlsx", Content: tc.data})
			if !errors.Is(err, previewer.ErrCannotPreview) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("got %v, want a refusal saying %q", err, tc.says)
			}
		})
	}
}

func FuzzXLSX(f *testing.F) {
	f.Add(Budget(f))
	f.Add([]byte("PK\x03\x04"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := previewertest.Check(New(), "f.xlsx", data); err != nil {
			t.Fatal(err)
		}
	})
}

// farCells is a workbook whose every row holds one cell in the last column
// (XFD): a few kilobytes that excelize pads to 16,384 cells a row.
func farCells(rows int) []byte {
	var sheet strings.Builder
	sheet.WriteString(`<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>`)
	for i := 1; i <= rows; i++ {
		fmt.Fprintf(&sheet, `<row r="%d"><c r="XFD%d" t="inlineStr"><is><t>x</t></is></c></row>`, i, i)
	}
	sheet.WriteString(`</sheetData></worksheet>`)
	const rels = `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">`
	return ooxml.Build(
		ooxml.Part{Name: "[Content_Types].xml", Data: []byte(`<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>`)},
		ooxml.Part{Name: "_rels/.rels", Data: []byte(rels + `<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>`)},
		ooxml.Part{Name: "xl/workbook.xml", Data: []byte(`<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>`)},
		ooxml.Part{Name: "xl/_rels/workbook.xml.rels", Data: []byte(rels + `<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>`)},
		ooxml.Part{Name: "xl/worksheets/sheet1.xml", Data: []byte(sheet.String())},
	)
}

// TestFarCellsBounded: rows that each hold one far cell are read only up to
// MaxRead, so a small workbook cannot make the previewer allocate gigabytes
// (2,000 such rows allocated over 2 GiB when every row was read).
func TestFarCellsBounded(t *testing.T) {
	data := farCells(2_000)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r, err := New().Preview(context.Background(), previewer.Request{Path: "far.xlsx", Content: data})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 512<<20 {
		t.Errorf("a %d-byte workbook allocated %d MiB", len(data), alloc>>20)
	}
	if !r.Truncated || len(r.Blocks) == 0 || len(r.Blocks) >= 2_000 {
		t.Errorf("got %d rows (truncated %v), want the first rows only", len(r.Blocks), r.Truncated)
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "reach too far") {
		t.Errorf("notes %q do not say why rows are missing", r.Notes)
	}
	if got := r.Blocks[0].Row; got.Number != 1 || len(got.Cells) != MaxColumns {
		t.Errorf("first row: number %d, %d cells", got.Number, len(got.Cells))
	}
	if err := previewer.Validate(r, previewer.DefaultMaxBlocks); err != nil {
		t.Error(err)
	}
}
