package agents

import (
	"fmt"
	"strings"
)

// OpeningError is a profile refused for what it would open in the sandbox:
// a credential path, Kule's own home, a whole personal directory, another
// agent's state, or something that is no path under ~. It wraps ErrInvalid
// and says the same as before; a run keeps its fields in the task's
// sandbox log.
type OpeningError struct {
	Profile, Source string
	Field           string // state, login or read_only
	Path            string // as the profile wrote it
	Why             string
}

func (e *OpeningError) Error() string {
	sep := " "
	if strings.HasPrefix(e.Why, ":") {
		sep = ""
	}
	return fmt.Sprintf("%v: %s (%s): %s %q%s%s", ErrInvalid, e.Profile, e.Source, e.Field, e.Path, sep, e.Why)
}

func (e *OpeningError) Unwrap() error { return ErrInvalid }

func refuseOpening(p Profile, field, path, format string, args ...any) error {
	return &OpeningError{Profile: p.Name, Source: p.Source, Field: field, Path: path, Why: fmt.Sprintf(format, args...)}
}
