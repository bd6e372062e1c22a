package group

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/kulehq/kule/kernel/internal/policy"
)

func ptr(s string) *string { return &s }

func TestGroupsKeepNameColourAndPolicy(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	s := Open(home)
	a, err := s.Create(Edit{Name: ptr("  Web\nsite "), Colour: ptr("teal")})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Create(Edit{Name: ptr("Careful"), Policy: ptr(Careful)})
	if err != nil {
		t.Fatal(err)
	}
	gs, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 2 || gs[0].ID != a.ID || gs[0].Name != "Web site" || gs[1].Policy != Careful {
		t.Fatalf("groups = %+v", gs)
	}
	e, err := s.LoadPolicy(b.ID, t.TempDir(), "")
	if err != nil || e.Choice() != policy.Careful {
		t.Fatalf("careful group's policy: %v, choice %q", err, e.Choice())
	}
	if _, err := s.Create(Edit{Name: ptr("  ")}); !errors.Is(err, ErrBadGroup) {
		t.Fatalf("a group without a name: %v", err)
	}
	if _, err := s.Change(a.ID, Edit{Policy: ptr("lax")}); !errors.Is(err, ErrBadPolicy) {
		t.Fatalf("an unknown policy: %v", err)
	}
	if _, err := s.Change(a.ID, Edit{Policy: ptr(Own)}); !errors.Is(err, ErrNoOwn) {
		t.Fatalf("own policy without a text: %v", err)
	}
}

func TestOwnPolicyIsValidatedBeforeItIsKept(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	s := Open(home)
	g, err := s.Create(Edit{Name: ptr("Mine"), OwnPolicy: ptr("permit (principal, action, resource);\n")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Change(g.ID, Edit{OwnPolicy: ptr("permit (principal, action, resource) when { resource.nope };")}); !errors.Is(err, policy.ErrPolicy) {
		t.Fatalf("a policy that does not validate: %v", err)
	}
	if txt, _ := s.OwnPolicy(g.ID); txt != "permit (principal, action, resource);\n" {
		t.Fatalf("the refused text replaced the kept one: %q", txt)
	}
	if _, err := s.LoadPolicy(g.ID, t.TempDir(), ""); err != nil {
		t.Fatal(err)
	}
	// The file gone: refused, never a silent fallback to the built-ins.
	if err := os.Remove(s.PolicyPath(g.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LoadPolicy(g.ID, t.TempDir(), ""); !errors.Is(err, ErrNoOwn) {
		t.Fatalf("a missing own policy: %v", err)
	}
}

func TestDamagedGroupsFile(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"not json":    "{",
		"bad id":      `{"groups":[{"id":"x","name":"a"}]}`,
		"twice":       `{"groups":[{"id":"0000000a","name":"a"},{"id":"0000000a","name":"b"}]}`,
		"policy word": `{"groups":[{"id":"0000000a","name":"a","policy":"lax"}]}`,
	} {
		home := t.TempDir()
		if err := os.WriteFile(filepath.Join(home, "groups.json"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(home).List(); !errors.Is(err, ErrDamaged) {
			t.Errorf("%s: %v, want ErrDamaged", name, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"groups":[{"id":"0000000a","name":"a","colour":"teal","policy":"own","order":1}]}`))
	f.Add([]byte(`{"groups":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		gs, err := Decode(b)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, g := range gs {
			if !validID(g.ID) || seen[g.ID] || checkPolicy(g.Policy) != nil {
				t.Fatalf("Decode kept a bad group %+v", g)
			}
			seen[g.ID] = true
		}
	})
}
