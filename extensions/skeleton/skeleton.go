// Package skeleton is the extension `kule ext new ID` writes: a manifest, a
// command, a panel and a review-notes hook, with the SDK's TypeScript
// declarations beside them (kule.d.ts, taken from extensions/sdk so there is
// one copy). It packs and runs as it is.
package skeleton

import (
	"embed"
	"io/fs"
	"strings"

	"github.com/kulehq/kule/extensions/sdk"
)

//go:embed files
var files embed.FS

// Files returns the skeleton of the extension id (publisher.name) named
// name, by path.
func Files(id, name string) (map[string][]byte, error) {
	out := map[string][]byte{}
	err := fs.WalkDir(files, "files", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		s := strings.ReplaceAll(strings.ReplaceAll(string(b), "{{ID}}", id), "{{NAME}}", name)
		out[strings.TrimPrefix(p, "files/")] = []byte(s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	out["kule.d.ts"] = append([]byte(nil), sdk.DTS...)
	return out, nil
}
