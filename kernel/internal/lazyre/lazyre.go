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

// Regexp is a regular expression compiled on its first match.
type Regexp struct {
	expr string
	once sync.Once
	re   *regexp.Regexp
}

// New returns expr, to be compiled on its first use. An expr that does not
// compile panics there, as regexp.MustCompile would at start (the tests of
// each user match every pattern at least once).
func New(expr string) *Regexp { return &Regexp{expr: expr} }

// MatchString reports whether s contains a match of the expression.
func (r *Regexp) MatchString(s string) bool {
	r.once.Do(func() { r.re = regexp.MustCompile(r.expr) })
	return r.re.MatchString(s)
}
