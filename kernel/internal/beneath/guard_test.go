package beneath

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// This guard keeps every write into a task's tree going through this
// package: it fails when code under kernel/ joins a path under a task's
// copy, base, home layer, tmp or caches with filepath.Join (or a string +)
// and hands it to a call that writes, removes, renames, links or changes
// modes. Such a path follows any link a command planted in the middle of
// it. The check reads the source (go/ast), follows the joined path through
// local variables, into the functions it is passed to and out of those that
// find things from it (a repository's directory in the copy), and knows the
// task trees by the fields that hold them. It does not follow a path kept
// in a struct field and written later, nor one reached through an
// interface's method: those it cannot see.

// treeFields are the selectors that hold a task tree's root: task.Paths'
// Copy, Base, Home and Tmp, runner.Task's Copy, Tmp and Home, and
// clone.Base.Dir / homelayer.Layer.Dir (recognised by the declared type of
// the variable they are selected from).
var treeFields = map[string]bool{
	"Paths.Copy": true, "Paths.Base": true, "Paths.Home": true, "Paths.Tmp": true,
	"Task.Copy": true, "Task.Tmp": true, "Task.Home": true,
}

// pathsTypes are the types whose Copy, Base, Home and Tmp are roots.
var pathsTypes = map[string]bool{"Paths": true, "task.Paths": true}

// treeTypes are the types whose Dir field is a task tree's root.
var treeTypes = map[string]bool{"Base": true, "clone.Base": true, "Layer": true, "homelayer.Layer": true}

// writers are the calls that change what a path names, and which of their
// arguments are paths (0-based).
var writers = map[string][]int{
	"os.WriteFile": {0}, "os.Create": {0}, "os.OpenFile": {0}, "os.Remove": {0}, "os.RemoveAll": {0},
	"os.Rename": {0, 1}, "os.Mkdir": {0}, "os.MkdirAll": {0}, "os.MkdirTemp": {0}, "os.CreateTemp": {0},
	"os.Symlink": {1}, "os.Link": {0, 1}, "os.Chmod": {0}, "os.Chown": {0}, "os.Lchown": {0},
	"os.Chtimes": {0}, "os.Truncate": {0}, "os.OpenRoot": {0},
	"ioutil.WriteFile": {0}, "atomicfile.Write": {0}, "atomicfile.WriteWith": {0}, "atomicfile.Append": {0},
	"unix.Open": {0}, "unix.Unlink": {0}, "unix.Rmdir": {0}, "unix.Mkdir": {0}, "unix.Chmod": {0},
	"unix.Rename": {0, 1}, "unix.Symlink": {1}, "unix.Lchown": {0}, "unix.Chown": {0}, "unix.Truncate": {0},
	"unix.UtimesNanoAt": {1}, "unix.Utimes": {0}, "unix.Creat": {0},
	"clone.CopyFile": {1}, "clone.CopyLink": {1}, "clone.MakeDir": {0}, "clone.FinishDir": {0},
	"clone.AppendPack": {0},
}

// readOnlyOpen: os.OpenFile and unix.Open only write with these flags.
var writeFlags = []string{"O_WRONLY", "O_RDWR", "O_CREATE", "O_CREAT", "O_APPEND", "O_TRUNC"}

// allowed are the writes the guard knows of and lets stand, each with why.
// Keyed by file (relative to the repository) and the enclosing function.
var allowed = map[string]string{
	// The copy and the base are made here, from the folder, into
	// directories Kule has just created: no command has run in them yet.
	"kernel/internal/clone/tree.go:Tree": "makes a new task's copy and base before any command runs",
}

type finding struct{ where, call string }

type goFile struct {
	rel, pkg string
	fset     *token.FileSet
	f        *ast.File
}

// taints say which parameters of which functions receive a tree's root
// ("root"), a value whose Dir is one ("val") or a path joined beneath one
// ("joined"), from their callers: keyed
// by "pkg.Func" (methods too), then by argument index.
type taints map[string]map[int]string

func (tt taints) mark(key string, i int, kind string) bool {
	if tt[key] == nil {
		tt[key] = map[int]string{}
	}
	if tt[key][i] == kind {
		return false
	}
	tt[key][i] = kind
	return true
}

// taskTreeWrites lists the writes into task trees that do not go through
// this package, in the Go files under dir (tests and kernel/internal/beneath left
// out), keyed like allowed. A root passed to a function (in the same
// package or as pkg.Func) makes that parameter a root inside it.
func taskTreeWrites(t *testing.T, dir string) []finding {
	t.Helper()
	var files []goFile
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "kernel/internal/beneath" || d.Name() == "testdata" || d.Name() == ".git" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		files = append(files, goFile{rel: rel, pkg: filepath.Base(filepath.Dir(p)), fset: fset, f: f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	tt := taints{}
	for round := 0; round < 10; round++ {
		changed := false
		for _, gf := range files {
			if _, c := fileWrites(gf, tt); c {
				changed = true
			}
		}
		if !changed {
			break
		}
	}
	var out []finding
	for _, gf := range files {
		fs, _ := fileWrites(gf, tt)
		out = append(out, fs...)
	}
	return out
}

// calleeKeys names the function a call reaches, as taints are keyed.
func calleeKeys(pkg string, fun ast.Expr) []string {
	switch f := fun.(type) {
	case *ast.Ident:
		return []string{pkg + "." + f.Name}
	case *ast.SelectorExpr:
		keys := []string{pkg + "." + f.Sel.Name}
		if id, ok := f.X.(*ast.Ident); ok {
			keys = append(keys, id.Name+"."+f.Sel.Name)
		}
		return keys
	}
	return nil
}

func fileWrites(gf goFile, tt taints) ([]finding, bool) {
	var out []finding
	changed := false
	for _, decl := range gf.f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		c := checker{roots: map[string]bool{}, vals: map[string]bool{}, paths: map[string]bool{}, derived: map[string]bool{}, joined: map[string]bool{}}
		c.declare(fn.Recv)
		c.declare(fn.Type.Params)
		if marks := tt[gf.pkg+"."+fn.Name.Name]; marks != nil {
			i := 0
			for _, field := range fn.Type.Params.List {
				names := field.Names
				if len(names) == 0 {
					i++
					continue
				}
				for _, n := range names {
					switch marks[i] {
					case "root":
						c.roots[n.Name] = true
					case "val":
						c.vals[n.Name] = true
					case "joined":
						c.joined[n.Name] = true
					}
					i++
				}
			}
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.DeclStmt:
				if g, ok := n.Decl.(*ast.GenDecl); ok {
					for _, s := range g.Specs {
						if vs, ok := s.(*ast.ValueSpec); ok {
							for i, name := range vs.Names {
								if treeTypes[exprString(vs.Type)] {
									c.vals[name.Name] = true
								}
								if i < len(vs.Values) {
									c.assign(name.Name, vs.Values[i])
								}
							}
						}
					}
				}
			case *ast.AssignStmt:
				if len(n.Lhs) == len(n.Rhs) {
					for i, l := range n.Lhs {
						if id, ok := l.(*ast.Ident); ok {
							c.assign(id.Name, n.Rhs[i])
						}
					}
				} else if len(n.Rhs) == 1 {
					// r, err := find(root, ...): what a function finds
					// from a root (a repository's git directory in the
					// copy) lies beneath it.
					if call, ok := n.Rhs[0].(*ast.CallExpr); ok && c.fromTree(call) {
						if id, ok := n.Lhs[0].(*ast.Ident); ok && id.Name != "_" {
							c.derived[id.Name] = true
						}
					}
				}
			case *ast.FuncLit:
				c.declare(n.Type.Params)
			case *ast.CallExpr:
				for i, a := range n.Args {
					if _, w := writers[exprString(n.Fun)]; w {
						break // judged at this call, not inside the writer
					}
					kind := ""
					if c.isRoot(a) {
						kind = "root"
					} else if c.isVal(a) {
						kind = "val"
					} else if c.isJoined(a) {
						kind = "joined"
					}
					if kind != "" {
						for _, k := range calleeKeys(gf.pkg, n.Fun) {
							if tt.mark(k, i, kind) {
								changed = true
							}
						}
					}
				}
				name := exprString(n.Fun)
				args, ok := writers[name]
				if !ok {
					return true
				}
				if (name == "os.OpenFile" || name == "unix.Open") && len(n.Args) > 1 && !hasWriteFlag(n.Args[1]) {
					return true
				}
				for _, i := range args {
					if i < len(n.Args) && c.isJoined(n.Args[i]) {
						out = append(out, finding{where: gf.rel + ":" + fn.Name.Name, call: gf.fset.Position(n.Pos()).String() + ": " + name})
					}
				}
			}
			return true
		})
	}
	return out, changed
}

// checker follows, within one function, which names hold a task tree's root
// and which hold a path joined beneath one.
type checker struct {
	roots   map[string]bool // names holding a tree's root
	vals    map[string]bool // names holding a value whose Dir is a tree's root
	paths   map[string]bool // names holding a task.Paths
	derived map[string]bool // names holding what a call found from a root: their fields are paths beneath it
	joined  map[string]bool // names holding a path joined beneath a root
}

func (c *checker) declare(fl *ast.FieldList) {
	if fl == nil {
		return
	}
	for _, f := range fl.List {
		typ := exprString(f.Type)
		typ = strings.TrimPrefix(typ, "*")
		for _, n := range f.Names {
			if treeTypes[typ] {
				c.vals[n.Name] = true
			}
			if pathsTypes[typ] {
				c.paths[n.Name] = true
			}
		}
	}
}

// treeValues make a value whose Dir is a tree's root.
var treeValues = map[string]bool{"baseOf()": true, "HomeLayer()": true, "homeLayerOf()": true, "kernel.HomeLayer()": true}

func (c *checker) assign(name string, v ast.Expr) {
	if cl, ok := v.(*ast.CompositeLit); ok && treeTypes[exprString(cl.Type)] {
		c.vals[name] = true
		return
	}
	switch {
	case exprString(v) == "task.LayoutOf()" || exprString(v) == "LayoutOf()":
		c.paths[name] = true
	case treeValues[exprString(v)]:
		c.vals[name] = true
	case c.isRoot(v):
		c.roots[name] = true
	case c.isJoined(v):
		c.joined[name] = true
	}
}

// fromTree: a call given a root or a path beneath one (not one of this
// package's, whose results are descriptors and roots, not paths).
func (c *checker) fromTree(call *ast.CallExpr) bool {
	if strings.HasPrefix(exprString(call.Fun), "beneath.") {
		return false
	}
	for _, a := range call.Args {
		if c.isRoot(a) || c.isJoined(a) {
			return true
		}
	}
	return false
}

// isVal: a name or call giving a value whose Dir is a tree's root.
func (c *checker) isVal(e ast.Expr) bool {
	if id, ok := e.(*ast.Ident); ok {
		return c.vals[id.Name]
	}
	return treeValues[exprString(e)]
}

// isRoot: a tree's root field, or a name holding one.
func (c *checker) isRoot(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.ParenExpr:
		return c.isRoot(e.X)
	case *ast.Ident:
		return c.roots[e.Name]
	case *ast.SelectorExpr:
		s := exprString(e)
		for f := range treeFields {
			if s == f || strings.HasSuffix(s, "."+f) {
				return true
			}
		}
		if id, ok := e.X.(*ast.Ident); ok && c.paths[id.Name] {
			switch e.Sel.Name {
			case "Copy", "Base", "Home", "Tmp":
				return true
			}
		}
		if e.Sel.Name == "Dir" {
			if id, ok := e.X.(*ast.Ident); ok && c.vals[id.Name] {
				return true
			}
			if treeValues[exprString(e.X)] {
				return true
			}
		}
	}
	return false
}

// isJoined: a path built beneath a root (filepath.Join(root, ...),
// root + "/" + ..., or a name holding one).
func (c *checker) isJoined(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.ParenExpr:
		return c.isJoined(e.X)
	case *ast.Ident:
		return c.joined[e.Name]
	case *ast.SelectorExpr:
		id, ok := e.X.(*ast.Ident)
		return ok && c.derived[id.Name]
	case *ast.CallExpr:
		switch exprString(e.Fun) {
		case "filepath.Join", "path.Join":
			if len(e.Args) > 1 && (c.isRoot(e.Args[0]) || c.isJoined(e.Args[0])) {
				return true
			}
		case "filepath.Dir", "filepath.Clean":
			return len(e.Args) == 1 && c.isJoined(e.Args[0])
		}
	case *ast.BinaryExpr:
		// root + "/" + rel is beneath root; root + ".old" is beside it.
		if e.Op == token.ADD {
			if c.isJoined(e.X) {
				return true
			}
			if lit, ok := e.Y.(*ast.BasicLit); ok && c.isRoot(e.X) && strings.HasPrefix(strings.Trim(lit.Value, "\"`"), "/") {
				return true
			}
		}
	}
	return false
}

func hasWriteFlag(e ast.Expr) bool {
	s := exprString(e)
	for _, f := range writeFlags {
		if strings.Contains(s, f) {
			return true
		}
	}
	return false
}

// exprString renders the selector chains and identifiers the guard matches.
func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	case *ast.StarExpr:
		return "*" + exprString(e.X)
	case *ast.BinaryExpr:
		return exprString(e.X) + "|" + exprString(e.Y)
	case *ast.ParenExpr:
		return exprString(e.X)
	case *ast.CallExpr:
		return exprString(e.Fun) + "()"
	}
	return ""
}

func TestNoWriteIntoATaskTreeBypassesBeneath(t *testing.T) {
	found := taskTreeWrites(t, filepath.Join("..", "..", ".."))
	seen := map[string]bool{}
	var bad []string
	for _, f := range found {
		seen[f.where] = true
		if _, ok := allowed[f.where]; !ok {
			bad = append(bad, f.call+" (in "+f.where+")")
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("%s writes to a path joined beneath a task's tree; open it beneath its root with kernel/internal/beneath instead (a link a command planted there would be followed)", b)
	}
	// An allow-list entry that no longer matches anything is dropped, so
	// the list only names what is still there.
	for w, why := range allowed {
		if !seen[w] {
			t.Errorf("allowed[%q] (%s) matches no write any more: remove it", w, why)
		}
	}
}

// TestTheGuardFindsWhatItLooksFor runs the guard on code that does each of
// the things it forbids, so that it cannot pass by finding nothing.
func TestTheGuardFindsWhatItLooksFor(t *testing.T) {
	found := taskTreeWrites(t, filepath.Join("testdata", "guard"))
	var got []string
	for _, f := range found {
		got = append(got, f.where+" "+f.call[strings.LastIndex(f.call, " ")+1:])
	}
	sort.Strings(got)
	want := []string{
		"bad.go:atomicAppend atomicfile.Append",
		"bad.go:atomicWrite atomicfile.Write",
		"bad.go:atomicWriteWith atomicfile.WriteWith",
		"bad.go:baseTree clone.CopyFile",
		"bad.go:concat os.Remove",
		"bad.go:createInCopy os.OpenFile",
		"bad.go:derivedField os.WriteFile",
		"bad.go:layerDir os.WriteFile",
		"bad.go:layout os.MkdirAll",
		"bad.go:removeThroughVar os.RemoveAll",
		"bad.go:renameTmp os.Rename",
		"bad.go:symlinkHome os.Symlink",
		"bad.go:writeUnder os.WriteFile",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the guard found:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestFollowLinksOnlyFromTests: the switch that turns the guard off is
// called by no code that ships.
func TestFollowLinksOnlyFromTests(t *testing.T) {
	err := filepath.WalkDir(filepath.Join("..", "..", ".."), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), "FollowLinksForTest(") && filepath.Base(p) != "beneath.go" {
			t.Errorf("%s calls beneath.FollowLinksForTest outside a test", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
