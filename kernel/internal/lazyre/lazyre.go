// Package lazyre holds regular expressions that compile at their first use
// instead of when the program starts. Every kule command starts the whole
// binary, and a pattern with counted repetitions ({0,63}) costs a tenth of a
// millisecond or more to compile: paid at start, for every command, whether
// or not it validates a name.
package lazyre

import (
	"regexp"
	"sync"
)

// Regexp is a regular expression compiled on its first use.
type Regexp struct {
	expr string
	once sync.Once
	re   *regexp.Regexp
}

// New returns expr, to be compiled on its first use. An expr that does not
// compile panics there, as regexp.MustCompile would at start (the tests of
// each user match every pattern at least once).
func New(expr string) *Regexp { return &Regexp{expr: expr} }

// compiled is the expression, compiled at the first use.
func (r *Regexp) compiled() *regexp.Regexp {
	r.once.Do(func() { r.re = regexp.MustCompile(r.expr) })
	return r.re
}

// MatchString reports whether s contains a match of the expression.
func (r *Regexp) MatchString(s string) bool { return r.compiled().MatchString(s) }

// Find is regexp.Regexp.Find: the leftmost match in b, nil for none.
func (r *Regexp) Find(b []byte) []byte { return r.compiled().Find(b) }

// FindStringSubmatch is regexp.Regexp.FindStringSubmatch: the leftmost
// match in s and its groups, nil for none.
func (r *Regexp) FindStringSubmatch(s string) []string { return r.compiled().FindStringSubmatch(s) }

// ReplaceAllString is regexp.Regexp.ReplaceAllString.
func (r *Regexp) ReplaceAllString(src, repl string) string {
	return r.compiled().ReplaceAllString(src, repl)
}
