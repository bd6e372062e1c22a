package ignore

import (
	"os"
	"path/filepath"
	"testing"
)

func TestIgnoredFollowsTheFoldersRules(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_ = os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	_ = os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("*.log\nbuild/\n!keep.log\n"), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "sub", ".gitignore"), []byte("secret.txt\n"), 0o644)
	m := Load(dir, []string{".gitignore", "sub/.gitignore"})
	for p, want := range map[string]bool{
		"a.log": true, "keep.log": false, "build/x/y": true, "src/main.go": false,
		"sub/secret.txt": true, "secret.txt": false, "deep/debug.log": true,
	} {
		if got := m.Ignored(p, false); got != want {
			t.Errorf("Ignored(%q) = %v, want %v", p, got, want)
		}
	}
}

func FuzzIgnored(f *testing.F) {
	f.Add("*.log\n!a.log\nbuild/\n", "x/a.log")
	f.Add("**/\x00\\", "\xff/..")
	f.Fuzz(func(t *testing.T, rules, path string) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte(rules), 0o644); err != nil {
			t.Fatal(err)
		}
		m := Load(dir, []string{".gitignore"})
		_ = m.Ignored(path, false)
		_ = m.Ignored(path, true)
	})
}
