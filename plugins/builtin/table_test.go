package builtin

import (
	"strings"
	"testing"
)

// TestTable: every entry is "differ/<name>" with a differ of that name, and
// names are unique, so `kule __plugin differ/<name>` serves what the kernel
// asked for.
func TestTable(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range Differs {
		kind, name, ok := strings.Cut(d.Name, "/")
		if !ok || kind != "differ" || name == "" {
			t.Errorf("entry %q: want differ/<name>", d.Name)
			continue
		}
		if got := d.New().Name(); got != name {
			t.Errorf("entry %q serves a differ named %q", d.Name, got)
		}
		if seen[d.Name] {
			t.Errorf("entry %q twice", d.Name)
		}
		seen[d.Name] = true
		if b, ok := Lookup(d.Name); !ok || b.Name != d.Name {
			t.Errorf("Lookup(%q) = %v, %v", d.Name, b, ok)
		}
	}
	if _, ok := Lookup("differ/nosuch"); ok {
		t.Error("Lookup of an unknown name succeeded")
	}
}
