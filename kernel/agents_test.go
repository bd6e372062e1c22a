package kernel

import (
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
)

// TestAgentsAreTheCatalogueGiven: the kernel knows no agent of its own; it
// runs the catalogue its Config hands it, plus the person's agents.toml.
func TestAgentsAreTheCatalogueGiven(t *testing.T) {
	const profile = "[[agent]]\nname = \"stand-in\"\ncommand = [\"stand-in-acp\"]\n"
	const personal = "[[agent]]\nname = \"mine\"\ncommand = [\"my-acp\"]\n"
	tests := map[string]struct {
		catalogue fstest.MapFS
		want      map[string]bool // name → built in
	}{
		"none given":  {want: map[string]bool{"mine": false}},
		"one given":   {catalogue: fstest.MapFS{"stand-in.toml": {Data: []byte(profile)}}, want: map[string]bool{"stand-in": true, "mine": false}},
		"empty given": {catalogue: fstest.MapFS{}, want: map[string]bool{"mine": false}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			home := t.TempDir()
			if err := os.WriteFile(filepath.Join(home, "agents.toml"), []byte(personal), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg := Config{Home: home}
			if tc.catalogue != nil {
				cfg.Agents = tc.catalogue
			}
			k, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			set, err := k.Agents()
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, p := range set.Profiles {
				got[p.Name] = p.Builtin
			}
			if len(got) != len(tc.want) {
				t.Fatalf("profiles = %v, want %v", got, tc.want)
			}
			for n, builtin := range tc.want {
				if b, ok := got[n]; !ok || b != builtin {
					t.Errorf("profile %q: present %v, built in %v; want built in %v", n, ok, b, builtin)
				}
			}
		})
	}
}
