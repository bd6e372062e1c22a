package builtin

import (
	"strings"
	"testing"
)

// TestTable: every entry is "differ/<name>" with its Accepts, and names
// are unique (plugins/builtin/differs checks kule-plugins makes each).
func TestTable(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range Differs {
		kind, name, ok := strings.Cut(d.Name, "/")
		if !ok || kind != "differ" || name == "" || d.Accepts == nil {
			t.Errorf("entry %q: want differ/<name> and its Accepts", d.Name)
			continue
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

// TestPreviewerTable: every entry is "previewer/<name>" with its Accepts,
// names are unique, and text, the last resort, comes last.
func TestPreviewerTable(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range Previewers {
		kind, name, ok := strings.Cut(p.Name, "/")
		if !ok || kind != "previewer" || name == "" || p.Accepts == nil {
			t.Errorf("entry %q: want previewer/<name> and its Accepts", p.Name)
			continue
		}
		if seen[p.Name] {
			t.Errorf("entry %q twice", p.Name)
		}
		seen[p.Name] = true
		if b, ok := LookupPreviewer(p.Name); !ok || b.Name != p.Name {
			t.Errorf("LookupPreviewer(%q) = %v, %v", p.Name, b.Name, ok)
		}
	}
	if last := Previewers[len(Previewers)-1].Name; last != "previewer/text" {
		t.Errorf("the last previewer is %s, want previewer/text", last)
	}
}
