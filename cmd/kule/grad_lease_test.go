package main

import (
	"strings"
	"testing"
)

// TestLeaseAndGraduationCommands: secrets add --lease keeps a minted
// secret without reading a value; secrets leases lists none held; rules
// proposals says there are none on a fresh home; accepting an id that is
// no proposal is an error that says where to look.
func TestLeaseAndGraduationCommands(t *testing.T) {
	home := t.TempDir()
	t.Setenv("KULE_HOME", home)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	out, err := runKule(t, "", "secrets", "add", "CLOUD_TOKEN", "--host", "api.cloud.test", "--lease", "1h", "--renew", "4", "--mint", "echo tok", "--revoke", "cat >/dev/null")
	if err != nil || !strings.Contains(out, "leased 1h0m0s at a time, renewed up to 4 times, minted for each lease") {
		t.Fatalf("add: %v\n%s", err, out)
	}
	out, err = runKule(t, "", "secrets", "add", "ONCE_TOKEN", "--host", "once.cloud.test", "--lease", "1h", "--renew", "1", "--mint", "echo tok")
	if err != nil || !strings.Contains(out, "renewed up to 1 time, minted") {
		t.Fatalf("add --renew 1: %v\n%s", err, out)
	}
	if _, err := runKule(t, "", "secrets", "add", "X", "--host", "h.test", "--mint", "echo tok"); err == nil {
		t.Error("--mint without --lease was accepted")
	}
	if _, err := runKule(t, "v", "secrets", "add", "X", "--host", "h.test", "--lease", "1h", "--revoke", "true"); err == nil {
		t.Error("--revoke without --mint was accepted")
	}
	if out, err := runKule(t, "", "secrets", "leases"); err != nil || !strings.Contains(out, "no leases held") {
		t.Fatalf("leases: %v\n%s", err, out)
	}
	if out, err := runKule(t, "", "rules", "proposals"); err != nil || !strings.Contains(out, "no proposals") {
		t.Fatalf("proposals: %v\n%s", err, out)
	}
	if out, err := runKule(t, "", "rules", "proposals", "--json"); err != nil || !strings.Contains(out, `"proposals": []`) {
		t.Fatalf("proposals --json: %v\n%s", err, out)
	}
	if _, err := runKule(t, "", "rules", "accept", "gdeadbee"); err == nil || !strings.Contains(err.Error(), "kule rules proposals") {
		t.Fatalf("accept of no proposal: %v", err)
	}
}
