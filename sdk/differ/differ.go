// Package differ is what a differ plugin implements: it reads the bytes of one
// file and names the entities in it (functions, methods, types, Markdown
// sections, JSON/TOML keys), so that a review says what changed inside a file
// by the names a person uses, and a three-way merge can work entity by entity.
//
// A differ has no file system and no network: it gets bytes and returns names.
package differ

import "context"

// Entity is one named part of a file.
type Entity struct {
	// Kind is what the entity is, in the file's own words: "func", "method",
	// "type", "class", "section", "key", ...
	Kind string
	// Name is the qualified name a person reads: "Task::commit",
	// "Plan › Later", "server.port". Two entities of one file never share
	// Kind+Name; a differ disambiguates overloads itself (e.g. "f(int)").
	Name string
	// Start and End are the byte range [Start, End) the entity covers,
	// including its doc comment or decorators where the language has them.
	Start, End int
	// Parent is the Name of the enclosing entity, "" at the top level.
	Parent string
}

// ID is the key an entity is matched by across versions: kind and name.
func (e Entity) ID() string { return e.Kind + " " + e.Name }

// Differ names the entities of files it understands.
//
// Lifecycle:
//  1. The host asks Accepts for each changed file's path (no bytes yet).
//  2. For an accepted file it calls Entities on the old and the new bytes.
//  3. A file that does not parse still returns what could be named, or an
//     empty list: the host then shows the file as changed as a whole. A
//     differ never panics on bad input; the host survives one that does.
type Differ interface {
	// Name is the differ's name, e.g. "go", "markdown".
	Name() string
	// Accepts says whether this differ reads the file at path (by its name).
	Accepts(path string) bool
	// Entities returns the entities of src, in file order.
	Entities(ctx context.Context, path string, src []byte) ([]Entity, error)
}

// Merger is the optional ability to merge three versions of a file entity by
// entity. A differ that lacks it gets the host's line merge.
type Merger interface {
	// Merge combines ours and theirs, both changed from base. Changes to
	// different entities both go in; two entities added at one place are both
	// kept; the same entity changed on both sides is a conflict by name.
	Merge(ctx context.Context, path string, base, ours, theirs []byte) (MergeResult, error)
}

// MergeResult is the outcome of a three-way merge.
type MergeResult struct {
	// Merged is the merged file; nil when there are conflicts.
	Merged []byte
	// Conflicts names what both sides changed, e.g. "method Task::commit".
	// A non-empty list means nothing of this file may be written.
	Conflicts []string
	// Merged entities, for the commit's report: "kept both: func A, func B".
	Notes []string
}
