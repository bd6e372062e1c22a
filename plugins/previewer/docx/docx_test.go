package docx

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/kulehq/kule/plugins/previewer/internal/ooxml"
	"github.com/kulehq/kule/sdk/previewer"
	"github.com/kulehq/kule/sdk/previewer/previewertest"
)

const w = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"`

func wpara(style, num, text string) string {
	ppr := ""
	if style != "" || num != "" {
		ppr = "<w:pPr>"
		if style != "" {
			ppr += `<w:pStyle w:val="` + style + `"/>`
		}
		if num != "" {
			id, lvl, _ := strings.Cut(num, "/")
			ppr += `<w:numPr><w:ilvl w:val="` + lvl + `"/><w:numId w:val="` + id + `"/></w:numPr>`
		}
		ppr += "</w:pPr>"
	}
	return "<w:p>" + ppr + "<w:r><w:t>" + text + "</w:t></w:r></w:p>"
}

// Report is a small document: a title, paragraphs, a numbered and a bulleted
// list, and a table.
func Report() []byte {
	body := wpara("Title", "", "Report") +
		`<w:p><w:r><w:t xml:space="preserve">Plain </w:t></w:r><w:r><w:rPr><w:b/></w:rPr><w:t>bold</w:t></w:r><w:r><w:t xml:space="preserve"> words.</w:t></w:r></w:p>` +
		wpara("Heading2", "", "Findings") +
		wpara("", "1/0", "first") + wpara("", "1/0", "second") + wpara("", "1/1", "inner") +
		wpara("", "2/0", "dot") +
		`<w:tbl><w:tr><w:tc>` + wpara("", "", "a") + `</w:tc><w:tc>` + wpara("", "", "b") + `</w:tc></w:tr>` +
		`<w:tr><w:tc>` + wpara("", "", "1") + `</w:tc><w:tc>` + wpara("", "", "2") + `</w:tc></w:tr></w:tbl>` +
		wpara("", "", "After &amp; end.")
	numbering := `<w:numbering ` + w + `>` +
		`<w:abstractNum w:abstractNumId="10"><w:lvl w:ilvl="0"><w:numFmt w:val="decimal"/></w:lvl><w:lvl w:ilvl="1"><w:numFmt w:val="lowerLetter"/></w:lvl></w:abstractNum>` +
		`<w:abstractNum w:abstractNumId="20"><w:lvl w:ilvl="0"><w:numFmt w:val="bullet"/></w:lvl></w:abstractNum>` +
		`<w:num w:numId="1"><w:abstractNumId w:val="10"/></w:num><w:num w:numId="2"><w:abstractNumId w:val="20"/></w:num></w:numbering>`
	return ooxml.Build(
		ooxml.Part{Name: "[Content_Types].xml", Data: []byte(`<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`)},
		ooxml.Part{Name: "word/document.xml", Data: []byte(`<?xml version="1.0" encoding="UTF-8"?><w:document ` + w + `><w:body>` + body + `</w:body></w:document>`)},
		ooxml.Part{Name: "word/numbering.xml", Data: []byte(numbering)},
	)
}

func TestConformance(t *testing.T) {
	previewertest.Run(t, New(), previewertest.Sample{Path: "report.docx", Src: Report()})
}

func TestOutline(t *testing.T) {
	r, err := New().Preview(context.Background(), previewer.Request{Path: "report.docx", Content: Report()})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range r.Blocks {
		switch {
		case b.Heading != nil:
			got = append(got, strings.Repeat("#", b.Heading.Level)+" "+b.Heading.Text)
		case b.Paragraph != nil:
			got = append(got, strings.TrimSpace(strings.Repeat(" ", b.Paragraph.Level)+b.Paragraph.Marker+" ¶"+itoa(b.Paragraph.Number)+" "+b.Paragraph.Text()))
		case b.Row != nil:
			got = append(got, "row "+strings.Join(b.Row.Cells, ","))
		}
	}
	want := []string{"# Report", "¶2 Plain bold words.", "## Findings", "1. ¶4 first", "2. ¶5 second", "a. ¶6 inner", "• ¶7 dot", "row a,b", "row 1,2", "¶8 After & end."}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if runs := r.Blocks[1].Paragraph.Runs; len(runs) != 3 || !runs[1].Bold || runs[1].Text != "bold" {
		t.Errorf("runs = %+v", runs)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestHostileDocuments(t *testing.T) {
	good := Report()
	doc := func(xml string) []byte {
		return ooxml.Build(ooxml.Part{Name: "word/document.xml", Data: []byte(xml)})
	}
	for name, tc := range map[string]struct {
		data []byte
		says string
	}{
		"zip bomb":          {ooxml.Build(ooxml.Part{Name: "word/document.xml", Zeros: ooxml.MaxPart + 1}), "zip bomb"},
		"entity expansion":  {doc(`<!DOCTYPE d [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;&a;">]><w:document ` + w + `>&b;</w:document>`), "entities"},
		"external entity":   {doc(`<!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]><w:document ` + w + `>&x;</w:document>`), "document type"},
		"undeclared entity": {doc(`<w:document ` + w + `><w:body><w:p><w:r><w:t>&x;</w:t></w:r></w:p></w:body></w:document>`), "not valid XML"},
		"truncated":         {good[:len(good)-20], "truncated"},
		"png that is a zip": {append([]byte("\x89PNG\r\n\x1a\n"), good...), "does not start as a ZIP"},
		"not a document":    {ooxml.Build(ooxml.Part{Name: "xl/workbook.xml", Data: []byte("<a/>")}), "not a Word document"},
		"deep nesting":      {doc(`<w:document ` + w + `>` + strings.Repeat("<w:x>", 10_000) + `</w:document>`), "nests deeper"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := New().Preview(context.Background(), previewer.Request{Path: "a.docx", Content: tc.data})
			if !errors.Is(err, previewer.ErrCannotPreview) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("got %v, want a refusal saying %q", err, tc.says)
			}
		})
	}
}

func FuzzDOCX(f *testing.F) {
	f.Add(Report())
	f.Add([]byte("PK\x03\x04"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := previewertest.Check(New(), "f.docx", data); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzDocumentXML fuzzes the body reader on its own, past the ZIP layer.
func FuzzDocumentXML(f *testing.F) {
	f.Add([]byte(`<w:document ` + w + `><w:body>` + wpara("Heading1", "", "x") + wpara("", "1/0", "y") + `</w:body></w:document>`))
	f.Add([]byte(`<w:tbl ` + w + `><w:tr><w:tc><w:tbl><w:tr><w:tc>` + wpara("", "", "z") + `</w:tc></w:tr></w:tbl></w:tc></w:tr></w:tbl>`))
	f.Fuzz(func(t *testing.T, xml []byte) {
		data := ooxml.Build(ooxml.Part{Name: "word/document.xml", Data: xml})
		if err := previewertest.Check(New(), "f.docx", data); err != nil {
			t.Fatal(err)
		}
	})
}
