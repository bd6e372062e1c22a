// Package bad does, once each, what the guard in guard_test.go forbids; it
// is never built (testdata), only read.
package bad

import (
	"os"
	"path/filepath"
)

func createInCopy(t *task.Task, rel string) {
	f, _ := os.OpenFile(filepath.Join(t.Paths.Copy, rel), os.O_WRONLY|os.O_CREATE, 0o644)
	f.Close()
}

func readInCopy(t *task.Task, rel string) {
	f, _ := os.OpenFile(filepath.Join(t.Paths.Copy, rel), os.O_RDONLY, 0) // reading: not a write
	f.Close()
}

func removeThroughVar(t *task.Task, p string) {
	dst := filepath.Join(t.Paths.Copy, p)
	os.RemoveAll(dst)
}

func baseTree(t *task.Task, src string, it walk.Item) {
	base := baseOf(t)
	clone.CopyFile(src, filepath.Join(base.Dir, "tree", it.Path), it, false, false)
}

func layerDir(l homelayer.Layer, rel string) {
	os.WriteFile(filepath.Join(l.Dir, rel), nil, 0o600)
}

func symlinkHome(t *task.Task, rel string) {
	home := t.Paths.Home
	os.Symlink("/etc/passwd", filepath.Join(home, rel))
}

func renameTmp(spec runner.Spec, rel string) {
	os.Rename(filepath.Join(spec.Task.Tmp, rel), "/elsewhere")
}

func atomicWrite(t *task.Task, rel string) {
	atomicfile.Write(filepath.Join(t.Paths.Base, rel), nil, 0o600)
}

func atomicWriteWith(t *task.Task, rel string) {
	atomicfile.WriteWith(filepath.Join(t.Paths.Copy, rel), atomicfile.Options{}, nil)
}

func atomicAppend(t *task.Task, rel string) {
	atomicfile.Append(filepath.Join(t.Paths.Home, rel), nil, 0o600)
}

func concat(t *task.Task, rel string) {
	os.Remove(t.Paths.Copy + "/" + rel)
}

func rootItself(t *task.Task) {
	os.RemoveAll(t.Paths.Copy) // the root itself: no link in the middle
}

func callsHelper(t *task.Task) {
	writeUnder(t.Paths.Copy, "x")
}

// writeUnder gets the copy's root from its caller.
func writeUnder(root, rel string) {
	os.WriteFile(filepath.Join(root, rel), nil, 0o600)
}

func layout(dir, name string) {
	paths := task.LayoutOf(dir)
	os.MkdirAll(filepath.Join(paths.Home, name), 0o700)
}

func beside(l homelayer.Layer) {
	os.Rename(l.Dir, l.Dir+".old") // beside the layer, not beneath it
}

func derivedField(t *task.Task) {
	r, _ := findRepo(t.Paths.Copy, "sub")
	os.WriteFile(filepath.Join(r.GitDir, "hooks", "pre-commit"), nil, 0o755)
}
