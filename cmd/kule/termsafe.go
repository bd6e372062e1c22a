package main

import "github.com/kulehq/kule/kernel"

// rawOutput turns safeLine and safeText off: only the test that shows what
// a planted escape does to a terminal sets it.
var rawOutput = false

// safeLine is every string that came from a task (a name, a path, a title,
// a reason that quotes them) as it reaches the terminal on one line: no
// escape sequence of it can act (see kernel/internal/termsafe).
func safeLine(s string) string {
	if rawOutput {
		return s
	}
	return kernel.SafeLine(s)
}

// safeText is safeLine for text that may span lines: an agent's message.
func safeText(s string) string {
	if rawOutput {
		return s
	}
	return kernel.SafeText(s)
}
