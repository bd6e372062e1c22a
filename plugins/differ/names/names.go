// Package names is what kule knows of the tree-sitter differs without
// linking them: the extensions each one reads. The differs read their
// extensions from here too (plugins/differ/internal/treesit), so the table
// kule chooses a differ by (plugins/builtin) and the differ kule-plugins
// serves never disagree, and tree-sitter and its C grammars stay out of
// every kule command's start.
package names

import (
	"path/filepath"
	"strings"
)

// The extensions of each tree-sitter differ, lower case.
var (
	CSharp     = []string{".cs", ".csx"}
	JavaScript = []string{".js", ".jsx", ".mjs", ".cjs"}
	Python     = []string{".py", ".pyi", ".pyw"}
	Rust       = []string{".rs"}
	TypeScript = []string{".ts", ".tsx", ".mts", ".cts"}
)

// Accepts reports whether path has one of exts, in any case.
func Accepts(path string, exts []string) bool {
	ext := strings.ToLower(filepath.Ext(path))
	for _, e := range exts {
		if ext == e {
			return true
		}
	}
	return false
}
