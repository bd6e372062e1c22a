// Package xlsx is the built-in previewer for Excel workbooks: every sheet
// from A1, each cell's value as Excel shows it and its formula where it has
// one. The workbook is read in memory (excelize on bytes, its unzip limits
// set so nothing is ever extracted to disk), after ooxml has inflated each
// part through a cap and refused zip bombs and XML that declares entities.
package xlsx

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/xuri/excelize/v2"

	"github.com/kulehq/kule/plugins/previewer/internal/ooxml"
	"github.com/kulehq/kule/plugins/previewer/names"
	"github.com/kulehq/kule/plugins/previewer/text"
	"github.com/kulehq/kule/sdk/previewer"
)

// Limits of a sheet shown.
const (
	MaxColumns = 1_000
	MaxCell    = 4 << 10
	MaxSheets  = 256
	// MaxRead bounds what one workbook may make excelize read: a unit for
	// each row and for each cell of a row up to its last, the blanks it
	// pads a row with included. One cell in column XFD costs 16,384 of
	// them, so without this bound a workbook of a few kilobytes whose rows
	// each hold one far cell takes gigabytes and minutes.
	MaxRead = 4_000_000
)

// Previewer shows Excel workbooks.
type Previewer struct{}

var _ previewer.Previewer = Previewer{}

// New returns the Excel previewer.
func New() previewer.Previewer { return Previewer{} }

// Name is "xlsx".
func (Previewer) Name() string { return "xlsx" }

// Accepts *.xlsx and *.xlsm (macros are never run: only cells are read).
func (Previewer) Accepts(p string) bool { return names.Sheet(p) }

// Preview reads every sheet of req.Content from A1.
func (Previewer) Preview(ctx context.Context, req previewer.Request) (previewer.Response, error) {
	pkg, err := ooxml.Open(req.Content, "Excel")
	if err != nil {
		return previewer.Response{}, err
	}
	if !pkg.Has("xl/workbook.xml") {
		return previewer.Response{}, ooxml.Refuse("not an Excel workbook (no xl/workbook.xml)")
	}
	f, err := excelize.OpenReader(bytes.NewReader(req.Content), excelize.Options{
		// Every part fits ooxml's caps already; these keep excelize from
		// extracting a large part to a temporary file, and from reading
		// more than those caps if a check were ever missed.
		UnzipSizeLimit:    ooxml.MaxTotal,
		UnzipXMLSizeLimit: ooxml.MaxTotal,
	})
	if err != nil {
		return previewer.Response{}, ooxml.Refuse("damaged Excel workbook (%v)", err)
	}
	defer f.Close()
	limit := req.Limit()
	resp := previewer.Response{Kind: previewer.KindSheet}
	sheets := f.GetSheetList()
	if len(sheets) > MaxSheets {
		resp.Notes = append(resp.Notes, fmt.Sprintf("%d sheets: the first %d are shown", len(sheets), MaxSheets))
		sheets = sheets[:MaxSheets]
	}
	paths := sheetParts(pkg)
	rd := &sheetReader{f: f, resp: &resp, limit: limit, budget: MaxRead}
	for _, sheet := range sheets {
		if ctx.Err() != nil {
			return previewer.Response{}, ctx.Err()
		}
		// Asking excelize for a cell's formula costs a scan of the sheet's
		// rows; only the cells whose XML holds a formula are asked.
		withFormula, known := formulaCells(pkg, paths[sheet])
		more, err := rd.sheet(sheet, withFormula, known)
		if err != nil {
			return previewer.Response{}, err
		}
		if !more {
			break
		}
	}
	if rd.spent {
		resp.Notes = append(resp.Notes, fmt.Sprintf("the workbook's rows reach too far to read all of them (more than %d cells, blanks included): the rows before are shown", MaxRead))
	}
	wide, long := rd.wide, rd.long
	if wide > 0 {
		resp.Notes = append(resp.Notes, fmt.Sprintf("rows of up to %d columns: the first %d are shown", wide, MaxColumns))
	}
	if long > 0 {
		resp.Notes = append(resp.Notes, fmt.Sprintf("%d cells longer than %d bytes are cut", long, MaxCell))
	}
	return resp, nil
}

// sheetReader reads sheets' rows into resp, one row at a time, until the
// blocks asked for or its budget (MaxRead) run out.
type sheetReader struct {
	f          *excelize.File
	resp       *previewer.Response
	limit      int
	budget     int
	spent      bool
	wide, long int
}

// sheet reads the rows of sheet and says whether to go on with the next.
func (rd *sheetReader) sheet(sheet string, withFormula map[string]bool, known bool) (more bool, err error) {
	rows, err := rd.f.Rows(sheet)
	if err != nil {
		return false, ooxml.Refuse("sheet %q cannot be read (%v)", sheet, err)
	}
	defer rows.Close()
	for n := 1; rows.Next(); n++ {
		if rd.budget <= 0 {
			rd.spent, rd.resp.Truncated = true, true
			return false, nil
		}
		row, err := rows.Columns()
		rd.budget -= 1 + len(row)
		if err != nil {
			break // as excelize's GetRows: the rows read so far are shown
		}
		if len(row) == 0 {
			continue // an empty row: the next one keeps its number
		}
		if len(rd.resp.Blocks) == rd.limit {
			rd.resp.Truncated = true
			return false, nil
		}
		if len(row) > MaxColumns {
			rd.wide = max(rd.wide, len(row))
			row = row[:MaxColumns]
		}
		cells := make([]string, len(row))
		var formulas []string
		for j, v := range row {
			v = clean(v)
			if len(v) > MaxCell {
				v = text.Cut(v, MaxCell) + "…"
				rd.long++
			}
			cells[j] = v
			if known && len(withFormula) == 0 {
				continue
			}
			name, err := excelize.CoordinatesToCellName(j+1, n)
			if err != nil || (known && !withFormula[name]) {
				continue
			}
			if fm, err := rd.f.GetCellFormula(sheet, name); err == nil && fm != "" {
				if formulas == nil {
					formulas = make([]string, len(row))
				}
				formulas[j] = clean(text.Cut(strings.TrimPrefix(fm, "="), MaxCell))
			}
		}
		rd.resp.Blocks = append(rd.resp.Blocks, previewer.Block{Row: &previewer.Row{Sheet: clean(sheet), Number: n, Cells: cells, Formulas: formulas}})
	}
	return true, nil
}

// sheetParts maps each sheet's name to its part ("xl/worksheets/sheet1.xml"),
// from the workbook and its relationships.
func sheetParts(pkg *ooxml.Package) map[string]string {
	out := map[string]string{}
	wb, err := pkg.Part("xl/workbook.xml")
	if err != nil {
		return out
	}
	rels, err := pkg.Part("xl/_rels/workbook.xml.rels")
	if err != nil {
		return out
	}
	target := map[string]string{}
	eachStart(rels, func(se xml.StartElement) {
		if se.Name.Local == "Relationship" {
			t := attr(se, "Target")
			if strings.HasPrefix(t, "/") {
				t = strings.TrimPrefix(t, "/")
			} else {
				t = path.Join("xl", t)
			}
			target[attr(se, "Id")] = t
		}
	})
	eachStart(wb, func(se xml.StartElement) {
		if se.Name.Local == "sheet" {
			for _, a := range se.Attr {
				if a.Name.Local == "id" && a.Name.Space != "" { // r:id, by its prefix (RawToken keeps prefixes)
					out[attr(se, "name")] = target[a.Value]
				}
			}
		}
	})
	return out
}

// formulaCells are the cells of the sheet part whose XML holds a formula;
// known is false when the part could not be read (then every cell is asked).
func formulaCells(pkg *ooxml.Package, part string) (map[string]bool, bool) {
	data, err := pkg.Part(part)
	if err != nil {
		return nil, false
	}
	out := map[string]bool{}
	cur := ""
	ok := eachStart(data, func(se xml.StartElement) {
		switch se.Name.Local {
		case "c":
			cur = attr(se, "r")
		case "f":
			if cur != "" {
				out[cur] = true
			}
		}
	})
	return out, ok
}

// eachStart calls fn for each start element of an XML document and says
// whether the document was read to its end.
func eachStart(data []byte, fn func(xml.StartElement)) bool {
	dec := xml.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.RawToken()
		if errors.Is(err, io.EOF) {
			return true
		}
		if err != nil {
			return false
		}
		if se, ok := tok.(xml.StartElement); ok {
			fn(se)
		}
	}
}

func attr(se xml.StartElement, local string) string {
	for _, a := range se.Attr {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

// clean makes s valid UTF-8 (a workbook's strings are meant to be).
func clean(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
