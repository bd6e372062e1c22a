package daemon

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kulehq/kule/kernel"
)

// TestNeedsListsAKeptSpentLease: a task whose kept lease budget has no
// renewal left of a secret that allows some is listed as spent, though no
// run holds a lease now (its next run would have one lease period); a
// secret kept with no renewals by choice is not. The grant gives the task
// the renewal and the list lets it go; a grant of a secret that is not
// kept is a 404 that says nothing was granted.
func TestNeedsListsAKeptSpentLease(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	t.Setenv("KULE_SECRETS_KEYFILE", "1")
	k := newKernel(t)
	d := startDaemon(t, Config{Kernel: k})
	st, err := kernel.OpenSecrets(k.Home())
	must(t, err)
	_, err = st.AddLeased("CLOUD_TOKEN", "tok", []string{"api.cloud.test"}, kernel.LeaseSpec{Every: time.Hour, Renewals: 3})
	must(t, err)
	_, err = st.AddLeased("ONCE_TOKEN", "tok", []string{"once.test"}, kernel.LeaseSpec{Every: time.Hour})
	must(t, err)
	rep, err := k.NewTask(context.Background(), sampleFolder(t))
	must(t, err)
	tk := rep.Task
	// What Kule keeps of a task whose runs used every renewal.
	must(t, os.WriteFile(filepath.Join(tk.Paths.Dir, "leases.json"), []byte(`{"CLOUD_TOKEN":0,"ONCE_TOKEN":0}`), 0o600))
	needs := func() NeedsView {
		t.Helper()
		code, body := call(t, d, "GET", "/api/needs", "")
		if code != 200 {
			t.Fatalf("needs: %d %s", code, body)
		}
		var v NeedsView
		must(t, json.Unmarshal([]byte(body), &v))
		return v
	}
	v := needs()
	if len(v.Leases) != 1 || v.Leases[0].Secret != "CLOUD_TOKEN" || v.Leases[0].Task != tk.ID || v.Leases[0].Held || v.Leases[0].Every != "1h0m0s" || len(v.Problems) != 0 {
		t.Fatalf("spent leases: %+v", v)
	}
	if code, body := call(t, d, "POST", "/api/tasks/"+tk.ID+"/leases/NO_SUCH/grant", `{"renew":1}`); code != 404 {
		t.Fatalf("a grant of no secret: %d %s", code, body)
	}
	if code, body := call(t, d, "POST", "/api/tasks/"+tk.ID+"/leases/CLOUD_TOKEN/grant", `{"renew":2}`); code != 200 {
		t.Fatalf("grant: %d %s", code, body)
	}
	if b := readFile(filepath.Join(tk.Paths.Dir, "leases.json")); b != `{"CLOUD_TOKEN":2,"ONCE_TOKEN":0}` {
		t.Fatalf("kept budget after the grant: %s", b)
	}
	if v := needs(); len(v.Leases) != 0 {
		t.Fatalf("still spent after the grant: %+v", v.Leases)
	}
}

// TestAcceptOfNoProposal: accepting an id no proposal has is a 404 that
// says nothing was remembered, and no rule is made.
func TestAcceptOfNoProposal(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, Config{})
	if code, body := call(t, d, "POST", "/api/proposals/gdeadbee/accept", ""); code != 404 || !json.Valid([]byte(body)) {
		t.Fatalf("accept: %d %s", code, body)
	}
	if rs := rules(t, d); rs != "" {
		t.Fatalf("rules: %s", rs)
	}
}
