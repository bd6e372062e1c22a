package pluginhost

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzApprovals: any plugins/approvals.json either fails to read with
// ErrApprovals and an error that names the file, or reads to approvals that
// saveApprovals writes back and approvals reads as the same.
func FuzzApprovals(f *testing.F) {
	sha := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	f.Add([]byte(`{"plugins":{"differ/ini":{"name":"ini","kind":"differ","version":"0.1.0","sha256":"` + sha + `","manifest_sha256":"` + sha + `","approved_at":"2026-01-02T03:04:05Z"}}}`))
	f.Add([]byte(`{"plugins":null}`))
	f.Add([]byte(`{}`))
	f.Add([]byte("{not json"))
	// One store saveApprovals wrote itself.
	h := New(f.TempDir(), Options{})
	if err := h.saveApprovals(map[string]Approval{"differ/ini": {Name: "ini", Kind: "differ", Version: "0.1.0", SHA256: sha, ManifestSHA256: sha, ApprovedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}}); err != nil {
		f.Fatal(err)
	}
	saved, err := os.ReadFile(h.approvalsPath())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(saved)

	f.Fuzz(func(t *testing.T, b []byte) {
		h := New(t.TempDir(), Options{})
		if err := os.MkdirAll(filepath.Dir(h.approvalsPath()), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(h.approvalsPath(), b, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := h.approvals()
		if err != nil {
			if !errors.Is(err, ErrApprovals) || !strings.Contains(err.Error(), h.approvalsPath()) {
				t.Fatalf("error is not ErrApprovals naming %s: %v", h.approvalsPath(), err)
			}
			if got != nil {
				t.Fatalf("approvals returned %v with its error", got)
			}
			return
		}
		if got == nil {
			t.Fatal("approvals gave a nil map")
		}
		if err := h.saveApprovals(got); err != nil {
			t.Fatalf("saveApprovals of what approvals read: %v", err)
		}
		back, err := h.approvals()
		if err != nil {
			saved, _ := os.ReadFile(h.approvalsPath())
			t.Fatalf("what saveApprovals wrote does not read: %v\n%s", err, saved)
		}
		if d := cmp.Diff(got, back, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("round trip changed the approvals (-read +reread):\n%s", d)
		}
	})
}
