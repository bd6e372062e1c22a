package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/kulehq/kule/kernel"
)

// previewCellWidth is the most characters of a cell a sheet shows in a
// terminal; the JSON has them whole.
const previewCellWidth = 32

func previewCommand() *cobra.Command {
	var asJSON, format bool
	var max int
	c := &cobra.Command{
		Use:   "preview TASK PATH[:PLACE]",
		Short: "Show a file of the task's copy as the app's Preview does (text, a sheet, a document's outline)",
		Long: "Reads PATH as the task's copy holds it now (never following a link, never leaving the copy) and\n" +
			"prints the previewer's model: text with line numbers, a sheet as a table, a document's outline,\n" +
			"a picture's format and size. --json prints the model itself. With :PLACE (lines 12-18,\n" +
			"#Section › Sub, Sheet1!B2:D9, ¶14, x,y-x,y) it prints the place as kule run --about tells an agent.",
		Args: cobra.ExactArgs(2),
		RunE: withTask(func(k *kernel.Kernel, t *kernel.Task, cmd *cobra.Command, args []string) error {
			h := pluginHost(k.Home())
			defer h.Close()
			if pl, err := kernel.ParsePlace(args[1]); err == nil && pl.Kind != kernel.PlaceFile {
				// PATH:PLACE: what an agent is told of that place.
				ds, err := k.DescribePlaces(cmd.Context(), t, h, []kernel.Place{pl})
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), ds[0])
				}
				_, list, _ := strings.Cut(kernel.AboutPrompt("", ds), ":\n")
				for _, l := range strings.Split(list, "\n") {
					fmt.Fprintln(cmd.OutOrStdout(), safeLine(l))
				}
				return nil
			}
			p, err := k.Preview(cmd.Context(), t, h, args[1], kernel.PreviewOptions{MaxBlocks: max, Format: format})
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), p)
			}
			printPreview(cmd.OutOrStdout(), p)
			return nil
		}),
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the preview's model as JSON")
	c.Flags().BoolVar(&format, "format", false, "lay out packed JSON or XML for reading (files up to 1 MB)")
	c.Flags().IntVar(&max, "max", 0, "the most lines, rows or blocks to show (0: the previewer's default)")
	return c
}

// printPreview draws a preview for a terminal; every piece of the file's
// text passes through safeLine, so no escape sequence of the file reaches it.
func printPreview(w io.Writer, p *kernel.Preview) {
	head := fmt.Sprintf("%s — %s", p.Path, p.Kind)
	if p.Language != "" && p.Language != p.Kind {
		head += ", " + p.Language
	}
	fmt.Fprintln(w, safeLine(fmt.Sprintf("%s, %s (%s)", head, plural(int(p.Size), "byte"), p.Previewer)))
	for _, n := range p.Notes {
		fmt.Fprintln(w, "note: "+safeLine(n))
	}
	width := len(strconv.Itoa(len(p.Blocks)))
	var rows [][]string
	flushRows := func() {
		printSheet(w, rows)
		rows = nil
	}
	for _, b := range p.Blocks {
		if b.Row == nil && rows != nil {
			flushRows()
		}
		switch {
		case b.Line != nil:
			fmt.Fprintf(w, "%*d  %s\n", width, b.Line.Number, safeLine(b.Line.Text))
		case b.Heading != nil:
			fmt.Fprintln(w, strings.Repeat("#", b.Heading.Level)+" "+safeLine(b.Heading.Text))
		case b.Paragraph != nil:
			indent := strings.Repeat("  ", max(b.Paragraph.Level-1, 0))
			lead := ""
			if b.Paragraph.Marker != "" {
				lead = b.Paragraph.Marker + " "
			}
			num := ""
			if b.Paragraph.Number > 0 && p.Kind == "document" {
				num = fmt.Sprintf("¶%d  ", b.Paragraph.Number)
			}
			fmt.Fprintln(w, num+indent+safeLine(lead+b.Paragraph.Text()))
		case b.Code != nil:
			for _, l := range strings.Split(b.Code.Text, "\n") {
				fmt.Fprintln(w, "    "+safeLine(l))
			}
		case b.Row != nil:
			if len(rows) > 0 && rowKey(b.Row.Sheet, b.Row.Table) != rows[0][0] {
				flushRows()
			}
			if rows == nil {
				if b.Row.Sheet != "" {
					fmt.Fprintln(w, "sheet "+safeLine(b.Row.Sheet))
				}
				rows = [][]string{{rowKey(b.Row.Sheet, b.Row.Table)}}
			}
			r := []string{strconv.Itoa(b.Row.Number)}
			for i, c := range b.Row.Cells {
				if i < len(b.Row.Formulas) && b.Row.Formulas[i] != "" {
					c = c + " (=" + b.Row.Formulas[i] + ")"
				}
				r = append(r, c)
			}
			rows = append(rows, r)
		case b.Image != nil:
			fmt.Fprintln(w, safeLine(fmt.Sprintf("%s picture, %d×%d pixels", strings.ToUpper(b.Image.Format), b.Image.Width, b.Image.Height)))
			for k, v := range b.Image.Metadata {
				fmt.Fprintln(w, "  "+safeLine(k+": "+v))
			}
		}
	}
	if rows != nil {
		flushRows()
	}
	if p.Truncated {
		fmt.Fprintln(w, "… (more than shown; --max shows more)")
	}
}

func rowKey(sheet string, table int) string { return sheet + "\x00" + strconv.Itoa(table) }

// printSheet prints rows (rows[0] is its key, then a row number and cells)
// as a table with column letters.
func printSheet(w io.Writer, rows [][]string) {
	rows = rows[1:]
	cols := 0
	for _, r := range rows {
		cols = max(cols, len(r)-1)
	}
	widths := make([]int, cols+1)
	cell := func(s string) string {
		s = safeLine(s)
		if utf8.RuneCountInString(s) > previewCellWidth {
			rs := []rune(s)
			s = string(rs[:previewCellWidth-1]) + "…"
		}
		return s
	}
	head := append([]string{""}, make([]string, cols)...)
	for i := 1; i <= cols; i++ {
		head[i] = kernel.ColumnName(i)
	}
	all := append([][]string{head}, rows...)
	for _, r := range all {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(cell(c)))
		}
	}
	for _, r := range all {
		var b strings.Builder
		for i := 0; i <= cols; i++ {
			c := ""
			if i < len(r) {
				c = cell(r[i])
			}
			if i > 0 {
				b.WriteString(" │ ")
			}
			b.WriteString(c)
			b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)))
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// aboutPrompt is prompt with the places --about names listed after it, each
// read in the task's copy first (kernel.DescribePlaces), and the picture
// regions among them cut out as PNGs (at most kernel.MaxPictures).
func aboutPrompt(ctx context.Context, k *kernel.Kernel, t *kernel.Task, prompt string, about []string) (string, []kernel.Picture, error) {
	if len(about) == 0 {
		return prompt, nil, nil
	}
	places := make([]kernel.Place, 0, len(about))
	for _, a := range about {
		p, err := kernel.ParsePlace(a)
		if err != nil {
			return "", nil, fmt.Errorf("run: --about: %w (nothing was started)", err)
		}
		places = append(places, p)
	}
	h := pluginHost(k.Home())
	defer h.Close()
	ds, err := k.DescribePlaces(ctx, t, h, places)
	if err != nil {
		return "", nil, fmt.Errorf("run: --about: %w", err)
	}
	return kernel.AboutPrompt(prompt, ds), kernel.AboutPictures(ds), nil
}
