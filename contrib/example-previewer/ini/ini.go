// Package ini previews INI files: each [section] a heading, its keys a
// table of key and value, comments left out.
package ini

import (
	"context"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/kulehq/kule/sdk/previewer"
)

// Previewer previews INI files.
type Previewer struct{}

var _ previewer.Previewer = Previewer{}

// New returns the INI previewer.
func New() previewer.Previewer { return Previewer{} }

// Name is "ini-preview".
func (Previewer) Name() string { return "ini-preview" }

// Accepts *.ini, *.cfg and *.conf.
func (Previewer) Accepts(p string) bool {
	switch strings.ToLower(path.Ext(p)) {
	case ".ini", ".cfg", ".conf":
		return true
	}
	return false
}

// Preview lays out req.Content: sections as headings, keys as rows.
func (Previewer) Preview(_ context.Context, req previewer.Request) (previewer.Response, error) {
	if !utf8.Valid(req.Content) || strings.IndexByte(string(req.Content), 0) >= 0 {
		return previewer.Response{}, fmt.Errorf("%w: not UTF-8 text", previewer.ErrCannotPreview)
	}
	resp := previewer.Response{Kind: "ini"}
	table, row := 0, 0
	add := func(b previewer.Block) bool {
		if len(resp.Blocks) >= req.Limit() {
			resp.Truncated = true
			return false
		}
		resp.Blocks = append(resp.Blocks, b)
		return true
	}
	for _, line := range strings.Split(string(req.Content), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, ";") || strings.HasPrefix(line, "#"):
			continue
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			table++
			row = 0
			if !add(previewer.Block{Heading: &previewer.Heading{Level: 2, Text: strings.TrimSpace(line[1 : len(line)-1])}}) {
				return resp, nil
			}
		default:
			if table == 0 {
				table = 1
			}
			k, v, _ := strings.Cut(line, "=")
			row++
			if !add(previewer.Block{Row: &previewer.Row{Table: table, Number: row, Cells: []string{strings.TrimSpace(k), strings.TrimSpace(v)}}}) {
				return resp, nil
			}
		}
	}
	return resp, nil
}
