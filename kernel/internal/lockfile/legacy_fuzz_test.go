package lockfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzReadLegacy: any pair of older approvals files (plugins/approvals.json
// and approvals.json) either fails to read with ErrDamaged and an error that
// names the file, or reads to approvals that kule.lock holds as they are:
// the first Update writes a lock that reads back the same, and the older
// files are set aside.
func FuzzReadLegacy(f *testing.F) {
	sha := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	f.Add([]byte(`{"plugins":{"differ/ini":{"name":"ini","kind":"differ","version":"0.1.0","sha256":"`+sha+`","manifest_sha256":"`+sha+`","approved_at":"2026-01-02T03:04:05Z"}}}`),
		[]byte(`{"agents":{"opencode":{"sha256":"`+sha+`","approved":"2026-01-02T03:04:05Z"}}}`))
	f.Add([]byte(`{"plugins":null}`), []byte(`{"agents":null}`))
	f.Add([]byte(`{}`), []byte(`{}`))
	f.Add([]byte(`{"plugins":{"a":{"sha256":"x"}}}`), []byte(`{"agents":{"a":{"sha256":"x","approved":"not a time"}}}`))
	f.Add([]byte("{not json"), []byte("{not json"))

	f.Fuzz(func(t *testing.T, plugins, agents []byte) {
		home := t.TempDir()
		if err := os.MkdirAll(filepath.Join(home, filepath.Dir(LegacyPlugins)), 0o700); err != nil {
			t.Fatal(err)
		}
		for rel, b := range map[string][]byte{LegacyPlugins: plugins, LegacyAgents: agents} {
			if err := os.WriteFile(filepath.Join(home, rel), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		got, err := Read(home)
		if err != nil {
			if !errors.Is(err, ErrDamaged) {
				t.Fatalf("error is not ErrDamaged: %v", err)
			}
			if !strings.Contains(err.Error(), filepath.Join(home, LegacyPlugins)) && !strings.Contains(err.Error(), filepath.Join(home, LegacyAgents)) {
				t.Fatalf("error names neither file: %v", err)
			}
			return
		}
		if err := Update(home, func(*Lock) error { return nil }); err != nil {
			t.Fatalf("Update over what the older files held: %v", err)
		}
		back, err := Read(home)
		if err != nil {
			saved, _ := os.ReadFile(Path(home))
			t.Fatalf("what Update wrote does not read: %v\n%s", err, saved)
		}
		if d := cmp.Diff(got, back, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("moving into kule.lock changed the approvals (-legacy +lock):\n%s", d)
		}
		for _, rel := range []string{LegacyPlugins, LegacyAgents} {
			if _, err := os.Lstat(filepath.Join(home, rel)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("%s was not set aside: %v", rel, err)
			}
		}
	})
}
