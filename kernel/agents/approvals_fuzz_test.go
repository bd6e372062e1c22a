package agents

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// FuzzReadApprovals: any approvals.json either fails to read with an error
// that names the file, or reads to approvals that Approve keeps: approving
// one more profile writes a file that reads back as the same approvals plus
// that one, and only that one is then approved.
func FuzzReadApprovals(f *testing.F) {
	f.Add([]byte(`{"agents":{"opencode":{"sha256":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","approved":"2026-01-02T03:04:05Z"}}}`))
	f.Add([]byte(`{"agents":null}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"agents":{"a":{"sha256":"x","approved":"not a time"}}}`))
	f.Add([]byte("{not json"))
	ps, err := Parse([]byte("[[agent]]\nname = \"fuzzed\"\ncommand = [\"npx\", \"-y\", \"a@1.0.0\"]\nstate = [\".a\"]\n"), "fuzz")
	if err != nil || len(ps) != 1 {
		f.Fatalf("seed profile: %v", err)
	}
	p := ps[0]
	// One approvals.json Approve wrote itself.
	home := f.TempDir()
	if err := Approve(home, p, ps); err != nil {
		f.Fatal(err)
	}
	saved, err := os.ReadFile(ApprovalsPath(home))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(saved)

	f.Fuzz(func(t *testing.T, b []byte) {
		home := t.TempDir()
		if err := os.WriteFile(ApprovalsPath(home), b, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := readApprovals(home)
		if err != nil {
			if !strings.Contains(err.Error(), ApprovalsPath(home)) {
				t.Fatalf("error does not name the file %s: %v", ApprovalsPath(home), err)
			}
			if ok, aerr := Approved(home, p); ok || aerr == nil {
				t.Fatalf("a damaged approvals.json approves %s (ok=%v, err=%v)", p.Name, ok, aerr)
			}
			return
		}
		if got.Agents == nil {
			t.Fatal("readApprovals gave a nil map")
		}
		before := time.Now().UTC()
		if err := Approve(home, p, ps); err != nil {
			t.Fatalf("Approve over what readApprovals read: %v", err)
		}
		back, err := readApprovals(home)
		if err != nil {
			saved, _ := os.ReadFile(ApprovalsPath(home))
			t.Fatalf("what Approve wrote does not read: %v\n%s", err, saved)
		}
		added, ok := back.Agents[p.Name]
		if !ok || added.Hash != p.Hash() || added.Approved.Before(before.Add(-time.Second)) {
			t.Fatalf("Approve kept %+v for %s, want its hash %s", added, p.Name, p.Hash())
		}
		want := got.Agents
		want[p.Name] = added
		if d := cmp.Diff(want, back.Agents); d != "" {
			t.Fatalf("Approve changed other approvals (-read +written):\n%s", d)
		}
		if ok, err := Approved(home, p); !ok || err != nil {
			t.Fatalf("Approved after Approve = %v, %v", ok, err)
		}
	})
}
