// Package ini is an example third-party differ for INI files, written only
// against Kule's SDK (sdk/differ, sdk/plugin). It names sections
// ("section server") and keys ("key server.port"), so a review says which
// settings changed.
package ini

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/kulehq/kule/sdk/differ"
)

// Differ reads *.ini and *.cfg files.
type Differ struct{}

var _ differ.Differ = Differ{}

// New returns the INI differ.
func New() differ.Differ { return Differ{} }

// Name is "ini".
func (Differ) Name() string { return "ini" }

// Accepts reads *.ini, *.cfg and *.conf files.
func (Differ) Accepts(p string) bool {
	switch strings.ToLower(path.Ext(p)) {
	case ".ini", ".cfg", ".conf":
		return true
	}
	return false
}

// Entities returns a "section" entity per [section] of req.Content (from its
// header to the next one) and a "key" entity per key = value line, named
// section.key. Keys before the first section are top level. Repeated names get " (2)", " (3)".
// Lines it cannot read are left to the top level or their section.
func (Differ) Entities(ctx context.Context, req differ.EntitiesRequest) (differ.EntitiesResponse, error) {
	src := req.Content
	var out []differ.Entity
	seen := map[string]int{}
	unique := func(kind, name string) string {
		id := kind + " " + name
		seen[id]++
		if n := seen[id]; n > 1 {
			return fmt.Sprintf("%s (%d)", name, n)
		}
		return name
	}
	section := -1 // index in out of the open section
	closeSection := func(end int) {
		if section >= 0 {
			out[section].End = end
			section = -1
		}
	}
	for off := 0; off < len(src); {
		if err := ctx.Err(); err != nil {
			return differ.EntitiesResponse{}, err
		}
		end := len(src)
		if i := bytes.IndexByte(src[off:], '\n'); i >= 0 {
			end = off + i + 1
		}
		line := strings.TrimSpace(strings.ToValidUTF8(string(src[off:end]), "\uFFFD"))
		switch {
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") && len(line) > 2:
			closeSection(off)
			name := strings.TrimSpace(line[1 : len(line)-1])
			if name == "" {
				break
			}
			out = append(out, differ.Entity{Kind: "section", Name: unique("section", name), Start: off, End: end})
			section = len(out) - 1
		case line == "", line[0] == ';', line[0] == '#':
		default:
			k, _, ok := strings.Cut(line, "=")
			if !ok {
				k, _, ok = strings.Cut(line, ":")
			}
			k = strings.TrimSpace(k)
			if !ok || k == "" {
				break
			}
			e := differ.Entity{Kind: "key", Start: off, End: end}
			if section >= 0 {
				e.Parent = out[section].Name
				k = e.Parent + "." + k
			}
			e.Name = unique("key", k)
			out = append(out, e)
		}
		off = end
	}
	closeSection(len(src))
	return differ.EntitiesResponse{Entities: out}, nil
}
