// Package csv is the built-in previewer for comma-, semicolon- and
// tab-separated values: a sheet from A1, row by row, at most MaxColumns
// columns and MaxCell bytes a cell shown.
package csv

import (
	"context"
	stdcsv "encoding/csv"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/kulehq/kule/plugins/previewer/names"
	"github.com/kulehq/kule/plugins/previewer/text"
	"github.com/kulehq/kule/sdk/previewer"
)

// Limits of a sheet shown.
const (
	MaxColumns = 1_000
	MaxCell    = 4 << 10
)

// Previewer shows CSV files as a sheet.
type Previewer struct{}

var _ previewer.Previewer = Previewer{}

// New returns the CSV previewer.
func New() previewer.Previewer { return Previewer{} }

// Name is "csv".
func (Previewer) Name() string { return "csv" }

// Accepts *.csv and *.tsv (names.CSV).
func (Previewer) Accepts(p string) bool { return names.CSV(p) }

// Separator guesses the separator from the first line: a tab for *.tsv,
// else whichever of ',', ';' and tab the first line holds most of.
func Separator(p string, src string) rune {
	if strings.EqualFold(path.Ext(p), ".tsv") {
		return '\t'
	}
	first, _, _ := strings.Cut(src, "\n")
	best, n := ',', strings.Count(first, ",")
	for _, r := range []rune{';', '\t'} {
		if c := strings.Count(first, string(r)); c > n {
			best, n = r, c
		}
	}
	return best
}

// Preview reads req.Content as rows from A1.
func (Previewer) Preview(ctx context.Context, req previewer.Request) (previewer.Response, error) {
	src, notes, err := text.Decode(req.Content)
	if err != nil {
		return previewer.Response{}, err
	}
	r := stdcsv.NewReader(strings.NewReader(src))
	r.Comma = Separator(req.Path, src)
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	r.ReuseRecord = true
	limit := req.Limit()
	resp := previewer.Response{Kind: previewer.KindSheet, Notes: notes}
	wide, long := 0, 0
	for n := 1; ; n++ {
		if n%1024 == 0 && ctx.Err() != nil {
			return previewer.Response{}, ctx.Err()
		}
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return previewer.Response{}, fmt.Errorf("%w: not valid CSV at row %d (%v)", previewer.ErrCannotPreview, n, err)
		}
		if len(resp.Blocks) == limit {
			resp.Truncated = true
			break
		}
		if len(rec) > MaxColumns {
			wide = max(wide, len(rec))
			rec = rec[:MaxColumns]
		}
		cells := make([]string, len(rec))
		for i, c := range rec {
			if len(c) > MaxCell {
				c = text.Cut(c, MaxCell) + "…"
				long++
			}
			cells[i] = c
		}
		resp.Blocks = append(resp.Blocks, previewer.Block{Row: &previewer.Row{Number: n, Cells: cells}})
	}
	if wide > 0 {
		resp.Notes = append(resp.Notes, fmt.Sprintf("rows of up to %d columns: the first %d are shown", wide, MaxColumns))
	}
	if long > 0 {
		resp.Notes = append(resp.Notes, fmt.Sprintf("%d cells longer than %d bytes are cut", long, MaxCell))
	}
	return resp, nil
}
