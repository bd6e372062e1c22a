package kernel

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/manifest"
	"github.com/kulehq/kule/kernel/internal/walk"
)

// Masking finds the settings files through the manifest's index: every
// name it masks must be among the index's names, or a .env would go
// unmasked in a task whose manifest has an index.
func TestTheIndexNamesEverySettingsFile(t *testing.T) {
	names := []string{".env", ".envrc", ".env.local", ".env.production", "prod.env", "config/app.env", "a/b/.env.test"}
	m := &manifest.Manifest{Backend: "copy"}
	for _, n := range append(slices.Clone(names), "notes.txt", "env", "a/b/c.txt") {
		m.Entries = append(m.Entries, manifest.Entry{Item: walk.Item{Path: n, Type: effects.TypeFile}, Len: -1})
	}
	m.Sort()
	p := filepath.Join(t.TempDir(), "manifest")
	if err := manifest.Save(p, m); err != nil {
		t.Fatal(err)
	}
	sb, err := openSettingsBase(p)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.close()
	if sb.x == nil {
		t.Fatal("the manifest was loaded whole: no index was read")
	}
	got, err := sb.settingsFiles()
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(names)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("settings files %v, want %v", got, want)
	}
}
