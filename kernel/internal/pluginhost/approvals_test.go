package pluginhost

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A plugin approved in the plugins/approvals.json an older Kule wrote may
// still run, and its approval moves into kule.lock on the next change.
func TestOldApprovalsFileStillHonoured(t *testing.T) {
	h := newHost(t)
	if _, err := h.Install(makePlugin(t, "good", nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Install(makePlugin(t, "second", nil)); err != nil {
		t.Fatal(err)
	}
	st, err := h.Status("good")
	if err != nil {
		t.Fatal(err)
	}
	a := Approval{Name: "good", Kind: st.Manifest.Kind, Version: st.Manifest.Version, SHA256: st.ExeSHA256,
		ManifestSHA256: st.ManifestSHA256, ApprovedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	old, err := json.MarshalIndent(map[string]map[string]Approval{"plugins": {"good": a}}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.pluginsDir(), "approvals.json"), old, 0o600); err != nil {
		t.Fatal(err)
	}
	if st, err := h.Status("good"); err != nil || !st.Approved {
		t.Fatalf("a plugin approved in plugins/approvals.json: approved %v, %q, %v", st.Approved, st.Reason, err)
	}
	if st, err := h.Status("second"); err != nil || st.Approved {
		t.Fatalf("a plugin never approved is approved: %v", err)
	}
	if _, err := h.Approve("second"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"good", "second"} {
		if st, err := h.Status(name); err != nil || !st.Approved || !st.Approval.ApprovedAt.Equal(map[string]time.Time{"good": a.ApprovedAt, "second": st.Approval.ApprovedAt}[name]) {
			t.Fatalf("%s after the move to kule.lock: approved %v, %q, %v", name, st.Approved, st.Reason, err)
		}
	}
	lock, err := os.ReadFile(ApprovalsPath(h.home))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(lock), `"sha256:`+a.SHA256+`"`) || !strings.Contains(string(lock), `version = "1.0.0"`) {
		t.Fatalf("kule.lock does not pin good's exact version and sha256:\n%s", lock)
	}
}
