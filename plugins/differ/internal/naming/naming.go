// Package naming collects the entities of one file for the differs that
// scan text themselves (Markdown, JSON, TOML): unique names in file order,
// and helpers shared by them.
package naming

import (
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/kulehq/kule/sdk/differ"
)

// List collects entities; an ID already used gets " (2)", " (3)", ...
type List struct {
	Ents []differ.Entity
	used map[string]int
}

// MaxName is the longest name a differ gives, in bytes; the host refuses
// names over differ.MaxNameLen.
const MaxName = 1000

// Clean makes a name the host accepts: valid UTF-8 (bad bytes become
// U+FFFD) and at most MaxName bytes (cut with "…").
func Clean(name string) string {
	name = strings.ToValidUTF8(name, "\uFFFD")
	if len(name) > MaxName {
		cut := MaxName
		for cut > 0 && !utf8.RuneStart(name[cut]) {
			cut--
		}
		name = name[:cut] + "…"
	}
	return name
}

// Add appends an entity and returns its index.
func (l *List) Add(kind, name string, start, end int, parent string) int {
	if l.used == nil {
		l.used = map[string]int{}
	}
	name = Clean(name)
	id := kind + " " + name
	l.used[id]++
	if c := l.used[id]; c > 1 {
		name = fmt.Sprintf("%s (%d)", name, c)
	}
	l.Ents = append(l.Ents, differ.Entity{Kind: kind, Name: name, Start: start, End: end, Parent: parent})
	return len(l.Ents) - 1
}

// Lockfiles are files no differ reads by entity: they are generated, and a
// person reviews the manifest they come from.
var Lockfiles = map[string]bool{
	"package-lock.json": true, "npm-shrinkwrap.json": true, "composer.lock": true,
	"cargo.lock": true, "poetry.lock": true, "pipfile.lock": true, "uv.lock": true,
	"yarn.lock": true, "pnpm-lock.yaml": true, "gemfile.lock": true, "go.sum": true,
	"flake.lock": true, "deno.lock": true, "bun.lock": true, "packages.lock.json": true,
}

// HasExt says whether path ends in one of exts (lower case, with the dot)
// and is no lockfile.
func HasExt(path string, exts ...string) bool {
	base := strings.ToLower(filepath.Base(path))
	if Lockfiles[base] {
		return false
	}
	ext := filepath.Ext(base)
	for _, e := range exts {
		if ext == e {
			return true
		}
	}
	return false
}
