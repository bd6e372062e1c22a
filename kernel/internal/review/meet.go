package review

import (
	"sort"
	"strings"
)

// Meeting is a file two sets of changes both touch, and the entities both
// touch in it; no entities means they meet on the file as a whole (a file no
// differ reads, or one added or deleted on either side).
type Meeting struct {
	Path     string   `json:"path"`
	Entities []string `json:"entities,omitempty"`
}

// touched is what a file's review touches: its entity IDs, or the whole file.
func touched(f File) (whole bool, ids map[string]bool) {
	if f.Whole || f.Op != Changed {
		return true, nil
	}
	ids = map[string]bool{}
	for _, e := range f.Entities {
		ids[e.ID()] = true
		if e.Op == Renamed {
			ids[e.Kind+" "+e.OldName] = true
		}
	}
	return false, ids
}

// Meet lists where two reviews touch the same thing: the same entity of a
// file, or the same file where either side has no names for it. Use it for
// two tasks on one folder, or a task and the person's own edits since base.
func Meet(a, b Review) []Meeting {
	theirs := map[string]File{}
	for _, f := range b.Files {
		theirs[f.Path] = f
	}
	var out []Meeting
	for _, fa := range a.Files {
		fb, ok := theirs[fa.Path]
		if !ok {
			continue
		}
		wa, ia := touched(fa)
		wb, ib := touched(fb)
		if wa || wb {
			out = append(out, Meeting{Path: fa.Path})
			continue
		}
		var both []string
		for id := range ia {
			if ib[id] {
				both = append(both, id)
			}
		}
		if len(both) > 0 {
			sort.Strings(both)
			out = append(out, Meeting{Path: fa.Path, Entities: both})
		}
	}
	return out
}

// FormatMeet says where who meets these changes, as kule status prints it:
//
//	task 5e6f7a8b changes them too: src/task.rs · method Task::commit
//
// It returns "" when there is no meeting.
func FormatMeet(who string, ms []Meeting) string {
	if len(ms) == 0 {
		return ""
	}
	return who + " changes them too: " + MeetList(ms)
}

// MeetList is the list part of FormatMeet: "src/task.rs · method
// Task::commit, notes.md".
func MeetList(ms []Meeting) string {
	var parts []string
	for _, m := range ms {
		if len(m.Entities) == 0 {
			parts = append(parts, m.Path)
			continue
		}
		for _, e := range m.Entities {
			parts = append(parts, m.Path+" · "+e)
		}
	}
	return strings.Join(parts, ", ")
}
