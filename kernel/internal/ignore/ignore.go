// Package ignore answers whether a path is one the folder's .gitignore files
// exclude. The rules are always read from the real folder, never from the copy
// an agent can edit, so a task cannot hide its own changes from a commit.
package ignore

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// Matcher tells ignored paths.
type Matcher struct {
	m gitignore.Matcher
}

// Load reads the .gitignore files named by rels (paths relative to folder,
// e.g. "sub/.gitignore") from the folder, plus .git/info/exclude. Files that
// cannot be read are passed over: a missing rule only shows more changes.
func Load(folder string, rels []string) *Matcher {
	var ps []gitignore.Pattern
	add := func(file string, domain []string) {
		b, err := os.ReadFile(file)
		if err != nil {
			return
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			line := strings.TrimRight(sc.Text(), "\r")
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			ps = append(ps, gitignore.ParsePattern(line, domain))
		}
	}
	add(filepath.Join(folder, ".git", "info", "exclude"), nil)
	for _, rel := range rels {
		var domain []string
		if d := filepath.ToSlash(filepath.Dir(rel)); d != "." {
			domain = strings.Split(d, "/")
		}
		add(filepath.Join(folder, rel), domain)
	}
	return &Matcher{m: gitignore.NewMatcher(ps)}
}

// Ignored reports whether rel (slash-separated) is excluded, or lies in an
// excluded directory.
func (m *Matcher) Ignored(rel string, isDir bool) bool {
	if m == nil || m.m == nil {
		return false
	}
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		if m.m.Match(parts[:i], true) {
			return true
		}
	}
	return m.m.Match(parts, isDir)
}
