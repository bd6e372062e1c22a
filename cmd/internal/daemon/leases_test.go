package daemon

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kulehq/kule/cmd/internal/daemon/client"
	"github.com/kulehq/kule/kernel"
)

// TestSweepRevokesLeasesAfterKill9: a daemon runs a command whose proxy
// holds a minted lease; the daemon is killed with SIGKILL, so nothing
// released it. The next daemon's start finds the lease in the ledger,
// revokes its token and drops it.
func TestSweepRevokesLeasesAfterKill9(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	t.Setenv("KULE_SECRETS_KEYFILE", "1")
	home := filepath.Join(t.TempDir(), "home")
	must(t, os.MkdirAll(home, 0o700))
	folder := sampleFolder(t)
	logs := t.TempDir()
	st, err := kernel.OpenSecrets(home)
	must(t, err)
	_, err = st.AddLeased("CLOUD_TOKEN", "", []string{"api.cloud.test"}, kernel.LeaseSpec{Every: time.Hour, Renewals: 2,
		Mint:   `echo "tok-$KULE_LEASE_ID" | tee -a "` + logs + `/minted"`,
		Revoke: `read tok; echo "$tok" >> "` + logs + `/revoked"`})
	must(t, err)

	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "GO_WANT_HELPER_PROCESS=daemon", "KULE_HOME="+home)
	must(t, cmd.Start())
	ctx := context.Background()
	c := client.New(home)
	deadline := time.Now().Add(20 * time.Second)
	for !c.Running(ctx) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("helper daemon does not answer")
		}
		time.Sleep(20 * time.Millisecond)
	}
	var made struct{ Task TaskView }
	must(t, c.Do(ctx, "POST", "/api/tasks", map[string]string{"folder": folder}, &made))
	// The exec answers when the command ends: it is killed with the daemon.
	go func() {
		var step Step
		_ = c.Do(ctx, "POST", "/api/tasks/"+made.Task.ID+"/exec", ExecRequest{Command: `i=0; while [ -d "$HOME" ] && [ ! -e "$HOME/stop" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done`}, &step)
	}()
	k, err := kernel.New(kernel.Config{Home: home})
	must(t, err)
	var held []kernel.Lease
	for len(held) == 0 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the run never held a lease")
		}
		held, _ = k.Leases()
		time.Sleep(20 * time.Millisecond)
	}
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()
	// The command outlives the daemon in its sandbox: tell it to end.
	if tk, err := k.Resolve(made.Task.ID); err == nil {
		os.WriteFile(filepath.Join(tk.Paths.Home, "stop"), nil, 0o644)
	}
	if b, _ := os.ReadFile(filepath.Join(logs, "revoked")); len(b) != 0 {
		t.Fatalf("revoked before the sweep: %s", b)
	}
	if l, _ := k.Leases(); len(l) != 1 || kernel.LeaseHolderAlive(l[0]) {
		t.Fatalf("after kill -9 the ledger should hold one orphan: %+v", l)
	}
	startDaemon(t, Config{Kernel: k})
	minted, _ := os.ReadFile(filepath.Join(logs, "minted"))
	revoked, _ := os.ReadFile(filepath.Join(logs, "revoked"))
	if strings.TrimSpace(string(revoked)) != strings.TrimSpace(string(minted)) || len(minted) == 0 {
		t.Fatalf("minted %q, revoked %q at the next start", minted, revoked)
	}
	if l, _ := k.Leases(); len(l) != 0 {
		t.Fatalf("the ledger still holds %+v", l)
	}
}

// TestProposalsForNeedsYou: the daemon serves the graduation proposals
// (none on a fresh home) as JSON lists the app can show.
func TestProposalsForNeedsYou(t *testing.T) {
	k := newKernel(t)
	startDaemon(t, Config{Kernel: k})
	var out map[string][]any
	must(t, client.New(k.Home()).Do(context.Background(), "GET", "/api/proposals", nil, &out))
	if p, ok := out["proposals"]; !ok || p == nil || len(p) != 0 {
		t.Fatalf("proposals: %+v", out)
	}
	if _, ok := out["demotions"]; !ok {
		t.Fatalf("no demotions list: %+v", out)
	}
}
