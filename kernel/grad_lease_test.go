package kernel_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/internal/policy"
	"github.com/kulehq/kule/kernel/internal/secrets"
)

// TestLeasedSecretNeverReachesTheTask: a minted, leased secret is
// acquired for a run, the command sees only its placeholder, the token is
// in none of the task's files, and when the run ends the lease is
// released: revoked and gone from the ledger, its budget kept for the
// task.
func TestLeasedSecretNeverReachesTheTask(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "") // the key file
	t.Setenv("KULE_SECRETS_KEYFILE", "1")
	f := newFixture(t, map[string]string{"a.txt": "a\n"})
	tk := f.newTask()
	home := f.k.Store().Root
	dir := t.TempDir()
	st, err := kernel.OpenSecrets(home)
	if err != nil {
		t.Fatal(err)
	}
	mint := `echo "tok-minted-$KULE_LEASE_ID" | tee -a "` + dir + `/minted"`
	revoke := `read tok; echo "$tok" >> "` + dir + `/revoked"`
	if _, err := st.AddLeased("CLOUD_TOKEN", "", []string{"api.cloud.test"}, secrets.LeaseSpec{Every: time.Hour, Renewals: 4, Mint: mint, Revoke: revoke}); err != nil {
		t.Fatal(err)
	}
	f.sh(tk, `env > seen-env.txt; echo "$CLOUD_TOKEN" > seen-token.txt`)
	minted, _ := os.ReadFile(filepath.Join(dir, "minted"))
	tok := strings.TrimSpace(string(minted))
	if !strings.HasPrefix(tok, "tok-minted-") || strings.Contains(tok, "\n") {
		t.Fatalf("minted %q: want one token for the run", minted)
	}
	seen, _ := os.ReadFile(filepath.Join(tk.Paths.Copy, "seen-token.txt"))
	if !strings.HasPrefix(string(seen), "kule-secret-CLOUD_TOKEN-") {
		t.Fatalf("the command saw %q, want the placeholder", seen)
	}
	// Nowhere under the task or the home in the clear (the ledger seals it).
	for _, root := range []string{tk.Paths.Dir, home} {
		filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
			if err == nil && info.Mode().IsRegular() {
				if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(tok)) {
					t.Errorf("%s holds the leased token", p)
				}
			}
			return nil
		})
	}
	revoked, _ := os.ReadFile(filepath.Join(dir, "revoked"))
	if strings.TrimSpace(string(revoked)) != tok {
		t.Fatalf("revoked %q at the run's end, want %q", revoked, tok)
	}
	if ls, _ := f.k.Leases(); len(ls) != 0 {
		t.Fatalf("the ledger still holds %+v", ls)
	}
	if b, _ := os.ReadFile(filepath.Join(tk.Paths.Dir, "leases.json")); string(b) != `{"CLOUD_TOKEN":4}` {
		t.Fatalf("the task's budget: %s", b)
	}
}

// TestGraduatedRuleWithheldFromUntrustedInput: a graduated rule lets the
// folder's manifest changes pass, except for a task whose pending run came
// from a chat user who is not the operator: that one asks. With the gate
// taken away (the engine as loaded) it would pass.
func TestGraduatedRuleWithheldFromUntrustedInput(t *testing.T) {
	f, _ := memFixture(t)
	home := f.k.Store().Root
	if _, err := policy.Graduate(home, f.folder, "manifests-and-lockfiles", "", false, "gtest001"); err != nil {
		t.Fatal(err)
	}
	judge := func(src string) string {
		tk := f.newTask()
		if src != "" {
			id := f.k.MemoryRunStarted(tk, kernel.MemoryRun{Prompt: "add a dependency", Source: src})
			f.k.MemoryRunEnded(tk, id, kernel.MemoryRunEnd{StopReason: "end_turn"})
		}
		st := f.sh(tk, `echo "module x" > go.mod`)
		j, err := f.k.Judge(tk, st.Effects, false)
		if err != nil {
			t.Fatal(err)
		}
		return j.Overall()
	}
	if got := judge(""); got != kernel.RulingPasses {
		t.Fatalf("the operator's run: %s, want passes under the graduated rule", got)
	}
	if got := judge("chat"); got != kernel.RulingWaits {
		t.Fatalf("a chat stranger's run: %s, want waits", got)
	}
	// Unguarded: the engine as loaded lets it pass.
	e, err := f.k.LoadPolicy(f.folder)
	if err != nil {
		t.Fatal(err)
	}
	r := e.Judge(policy.TaskInfo{ID: "x"}, []policy.Request{{Action: policy.FileCreate, Path: "go.mod"}})
	if r.Verdicts[0].Outcome != policy.Pass {
		t.Fatalf("without the gate: %v", r.Verdicts[0].Outcome)
	}
}
