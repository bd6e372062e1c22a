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
//  2. For an accepted file it calls Entities on the old and the new bytes,
//     one EntitiesRequest each.
//  3. A file that does not parse still returns what could be named, or an
//     empty list: the host then shows the file as changed as a whole. A
//     differ never panics on bad input; the host survives one that does.
type Differ interface {
	// Name is the differ's name, e.g. "go", "markdown".
	Name() string
	// Accepts says whether this differ reads the file at path (by its name).
	Accepts(path string) bool
	// Entities returns the entities of req.Content, in file order.
	Entities(ctx context.Context, req EntitiesRequest) (EntitiesResponse, error)
}

// EntitiesRequest is what the host hands Entities. New inputs arrive as new
// fields, so a differ written against an older SDK still compiles and reads
// the fields it knows.
type EntitiesRequest struct {
	// Path is the file's slash-separated path in the folder, for differs
	// that read more than one dialect by name ("tsconfig.json").
	Path string
	// Content is the file's bytes. The differ may not keep or change them.
	Content []byte
}

// EntitiesResponse is what Entities answers.
type EntitiesResponse struct {
	// Entities are the named parts of the file, in file order.
	Entities []Entity
}

// Merger is the optional ability to merge three versions of a file entity by
// entity. A differ that lacks it gets the host's line merge.
type Merger interface {
	// Merge combines req.Ours and req.Theirs, both changed from req.Base.
	// Changes to different entities both go in; two entities added at one
	// place are both kept; the same entity changed on both sides is a
	// conflict by name.
	Merge(ctx context.Context, req MergeRequest) (MergeResponse, error)
}

// MergeRequest is what the host hands Merge: three versions of one file.
// New inputs arrive as new fields.
type MergeRequest struct {
	// Path is the file's slash-separated path in the folder.
	Path string
	// Base is the version both sides started from; Ours and Theirs are the
	// two changed versions. The differ may not keep or change them.
	Base, Ours, Theirs []byte
}

// MergeResponse is the outcome of a three-way merge.
type MergeResponse struct {
	// Merged is the merged file; nil when there are conflicts.
	Merged []byte
	// Conflicts names what both sides changed, e.g. "method Task::commit".
	// A non-empty list means nothing of this file may be written.
	Conflicts []string
	// Merged entities, for the commit's report: "kept both: func A, func B".
	Notes []string
}
