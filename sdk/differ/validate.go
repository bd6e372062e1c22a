package differ

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// ErrBadEntities is wrapped by Validate's errors: a differ returned entities
// the host cannot trust (out-of-range offsets, empty or duplicate names).
var ErrBadEntities = errors.New("differ: bad entities")

// MaxNameLen is the longest Kind or Name Validate accepts, in bytes.
const MaxNameLen = 4096

// Validate checks what a differ returned for src before anything trusts it:
// every range lies inside src with Start <= End, Kind and Name are non-empty
// valid UTF-8 of at most MaxNameLen bytes, and no two entities share an ID.
// The host treats a file whose entities fail Validate as changed as a whole.
func Validate(src []byte, es []Entity) error {
	seen := make(map[string]struct{}, len(es))
	for i, e := range es {
		switch {
		case e.Start < 0 || e.End < e.Start || e.End > len(src):
			return fmt.Errorf("%w: entity %d %q: range [%d,%d) outside the file's %d bytes", ErrBadEntities, i, e.ID(), e.Start, e.End, len(src))
		case e.Kind == "" || e.Name == "":
			return fmt.Errorf("%w: entity %d: empty kind or name", ErrBadEntities, i)
		case len(e.Kind) > MaxNameLen || len(e.Name) > MaxNameLen || len(e.Parent) > MaxNameLen:
			return fmt.Errorf("%w: entity %d: name longer than %d bytes", ErrBadEntities, i, MaxNameLen)
		case !utf8.ValidString(e.Kind) || !utf8.ValidString(e.Name) || !utf8.ValidString(e.Parent):
			return fmt.Errorf("%w: entity %d: name is not UTF-8", ErrBadEntities, i)
		}
		if _, dup := seen[e.ID()]; dup {
			return fmt.Errorf("%w: two entities named %q", ErrBadEntities, e.ID())
		}
		seen[e.ID()] = struct{}{}
	}
	return nil
}
