// Package previewers makes the built-in previewers that plugins/builtin
// names: kule-plugins serves them, kule only chooses one by its name.
package previewers

import (
	csvpreviewer "github.com/kulehq/kule/plugins/previewer/csv"
	docxpreviewer "github.com/kulehq/kule/plugins/previewer/docx"
	imagepreviewer "github.com/kulehq/kule/plugins/previewer/image"
	mdpreviewer "github.com/kulehq/kule/plugins/previewer/markdown"
	textpreviewer "github.com/kulehq/kule/plugins/previewer/text"
	xlsxpreviewer "github.com/kulehq/kule/plugins/previewer/xlsx"
	"github.com/kulehq/kule/sdk/previewer"
)

// makers are the previewers by the name plugins/builtin gives them.
var makers = map[string]func() previewer.Previewer{
	"previewer/image":    imagepreviewer.New,
	"previewer/markdown": mdpreviewer.New,
	"previewer/csv":      csvpreviewer.New,
	"previewer/xlsx":     xlsxpreviewer.New,
	"previewer/docx":     docxpreviewer.New,
	"previewer/text":     textpreviewer.New,
}

// New returns a fresh built-in previewer named "previewer/<name>".
func New(name string) (previewer.Previewer, bool) {
	m, ok := makers[name]
	if !ok {
		return nil, false
	}
	return m(), true
}
