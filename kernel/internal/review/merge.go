package review

import (
	"bytes"
	"context"
	"errors"
)

// MergeResult is the outcome of a three-way merge of one file.
type MergeResult struct {
	// Merged is the merged file; nil when there are conflicts.
	Merged []byte `json:"-"`
	// Conflicts say what both sides changed ("method Task::commit", "both
	// changed lines 12–15"). Non-empty means nothing of the file is written.
	Conflicts []string `json:"conflicts,omitempty"`
	// Notes say what was merged, for the commit's report.
	Notes []string `json:"notes,omitempty"`
	// By is how it was merged: "differ go", "lines", or "one side" when only
	// one side changed the file.
	By string `json:"by"`
}

// Merge merges ours and theirs, both changed from base, for the file at path.
// The file's differ merges entity by entity when it can (same entity changed
// on both sides: a conflict by name); otherwise the lines are merged where the
// changed regions are disjoint, and touching changes are a conflict. A differ
// that fails costs the entity merge only: the lines are merged instead, and a
// note says so. Merge never returns a half-merged file.
func Merge(ctx context.Context, ds Differs, path string, base, ours, theirs []byte) MergeResult {
	switch {
	case bytes.Equal(ours, theirs):
		return MergeResult{Merged: bytes.Clone(ours), By: "one side", Notes: []string{"both sides made the same change"}}
	case bytes.Equal(ours, base):
		return MergeResult{Merged: bytes.Clone(theirs), By: "one side"}
	case bytes.Equal(theirs, base):
		return MergeResult{Merged: bytes.Clone(ours), By: "one side"}
	}
	var notes []string
	var d Differ
	if ds != nil {
		d = ds.DifferFor(ctx, path)
	}
	if d != nil {
		r, err := d.Merge(ctx, path, base, ours, theirs)
		switch {
		case err == nil && len(r.Conflicts) > 0:
			return MergeResult{Conflicts: r.Conflicts, Notes: r.Notes, By: "differ " + d.Name()}
		case err == nil && r.Merged != nil:
			return MergeResult{Merged: r.Merged, Notes: r.Notes, By: "differ " + d.Name()}
		case err == nil:
			notes = append(notes, "differ "+d.Name()+" returned no merge; merged by lines")
		case errors.Is(err, ErrUnimplemented):
		default:
			notes = append(notes, "differ "+d.Name()+" could not merge ("+err.Error()+"); merged by lines")
		}
	}
	merged, conflicts := lineMerge(base, ours, theirs)
	return MergeResult{Merged: merged, Conflicts: conflicts, Notes: notes, By: "lines"}
}
