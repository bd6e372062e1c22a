package secrets

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// mintScripts are stand-ins for a cloud CLI: mint prints a fresh token
// (tok-1, tok-2, …) and logs it; revoke logs the token it was given on its
// stdin.
func mintScripts(t *testing.T, dir string) (mint, revoke string) {
	t.Helper()
	mint = `n=$(cat "` + dir + `/n" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "` + dir + `/n"; echo "tok-$n-$KULE_LEASE_ID" | tee -a "` + dir + `/minted"`
	revoke = `read tok; echo "$tok" >> "` + dir + `/revoked"; [ "$tok" = "$KULE_LEASE_TOKEN" ]`
	return mint, revoke
}

func lines(t *testing.T, p string) []string {
	t.Helper()
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestLeaseRenewsWithinBudgetThenFailsClosed(t *testing.T) {
	t.Parallel()
	st, home := keyFileStore(t)
	dir := t.TempDir()
	mint, revoke := mintScripts(t, dir)
	if _, err := st.AddLeased("CLOUD_TOKEN", "", []string{"api.cloud.test"}, LeaseSpec{Every: time.Hour, Renewals: 2, Mint: mint, Revoke: revoke}); err != nil {
		t.Fatal(err)
	}
	sec, err := st.Get("CLOUD_TOKEN")
	if err != nil || sec.Lease == nil || sec.Value != "" {
		t.Fatalf("kept %+v, %v", sec, err)
	}
	ls := st.Leases()
	c := &clock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	ls.Now = c.now
	h, err := ls.Acquire(context.Background(), sec, "task0001", -1)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	v1, err := h.Value(ctx)
	if err != nil || !strings.HasPrefix(v1, "tok-1-") {
		t.Fatalf("first value %q, %v", v1, err)
	}
	c.add(59 * time.Minute)
	if v, _ := h.Value(ctx); v != v1 {
		t.Fatalf("within the lease the value stays: %q then %q", v1, v)
	}
	var seen []string
	for i := 0; i < 2; i++ {
		c.add(time.Hour)
		v, err := h.Value(ctx)
		if err != nil || v == v1 {
			t.Fatalf("renewal %d: %q, %v", i+1, v, err)
		}
		seen = append(seen, v)
	}
	if h.Left() != 0 {
		t.Fatalf("left %d after two renewals", h.Left())
	}
	// Each renewal revoked the token it replaced.
	if got := lines(t, filepath.Join(dir, "revoked")); len(got) != 2 || got[0] != v1 || got[1] != seen[0] {
		t.Fatalf("revoked %v", got)
	}
	c.add(time.Hour)
	if v, err := h.Value(ctx); !errors.Is(err, ErrLeaseSpent) || v != "" {
		t.Fatalf("past the budget: %q, %v; want ErrLeaseSpent", v, err)
	}
	list, _ := ls.List()
	if len(list) != 1 || list[0].Holder != "task0001" || list[0].Renewed != 2 || list[0].Left != 0 {
		t.Fatalf("ledger %+v", list)
	}
	// The ledger keeps the token only sealed.
	if b, _ := os.ReadFile(LedgerPath(home)); bytes.Contains(b, []byte(seen[1])) {
		t.Fatal("the ledger holds the token in the clear")
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if got := lines(t, filepath.Join(dir, "revoked")); len(got) != 3 || got[2] != seen[1] {
		t.Fatalf("release should revoke the last token; revoked %v", got)
	}
	if list, _ := ls.List(); len(list) != 0 {
		t.Fatalf("released lease still in the ledger: %+v", list)
	}
	if _, err := h.Value(ctx); !errors.Is(err, ErrLeaseEnded) {
		t.Fatalf("after release: %v", err)
	}
}

// TestEachLeaseMintsItsOwn: two holders get two tokens; a resumed run
// acquires with what its checkpoint kept of the budget.
func TestEachLeaseMintsItsOwn(t *testing.T) {
	t.Parallel()
	st, _ := keyFileStore(t)
	dir := t.TempDir()
	mint, revoke := mintScripts(t, dir)
	st.AddLeased("T", "", []string{"api.cloud.test"}, LeaseSpec{Every: time.Minute, Renewals: 4, Mint: mint, Revoke: revoke})
	sec, _ := st.Get("T")
	ls := st.Leases()
	ctx := context.Background()
	a, err := ls.Acquire(ctx, sec, "aaaa0001", -1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ls.Acquire(ctx, sec, "bbbb0002", 1)
	if err != nil {
		t.Fatal(err)
	}
	va, _ := a.Value(ctx)
	vb, _ := b.Value(ctx)
	if va == vb {
		t.Fatal("two leases share a token")
	}
	if a.Left() != 4 || b.Left() != 1 {
		t.Fatalf("budgets %d %d", a.Left(), b.Left())
	}
	a.Release(ctx)
	b.Release(ctx)
	if got := lines(t, filepath.Join(dir, "revoked")); len(got) != 2 {
		t.Fatalf("revoked %v", got)
	}
}

// TestStoredSecretLease: a kept value leased is the value while the lease
// holds and nothing once its budget is spent.
func TestStoredSecretLease(t *testing.T) {
	t.Parallel()
	st, _ := keyFileStore(t)
	if _, err := st.AddLeased("K", "", nil, LeaseSpec{Every: time.Hour}); !errors.Is(err, ErrEmptyValue) && !errors.Is(err, ErrNoHost) {
		t.Fatalf("an unminted lease without value: %v", err)
	}
	if _, err := st.AddLeased("K", "v", []string{"h.test"}, LeaseSpec{Every: time.Hour, Mint: "echo x"}); !errors.Is(err, ErrMintAndKeep) {
		t.Fatalf("minted with a value: %v", err)
	}
	if _, err := st.AddLeased("K", "v", []string{"h.test"}, LeaseSpec{Every: 0}); !errors.Is(err, ErrBadLease) {
		t.Fatalf("zero lease: %v", err)
	}
	st.AddLeased("K", "sk_kept_value_1", []string{"h.test"}, LeaseSpec{Every: time.Hour, Renewals: 0})
	sec, _ := st.Get("K")
	ls := st.Leases()
	c := &clock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	ls.Now = c.now
	h, err := ls.Acquire(context.Background(), sec, "t", -1)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := h.Value(context.Background()); v != "sk_kept_value_1" {
		t.Fatalf("value %q", v)
	}
	c.add(time.Hour)
	if _, err := h.Value(context.Background()); !errors.Is(err, ErrLeaseSpent) {
		t.Fatalf("no renewals: %v", err)
	}
	if err := h.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestMintFailureGivesNoLease: a mint command that fails or prints
// nothing gives no lease and leaves nothing in the ledger.
func TestMintFailureGivesNoLease(t *testing.T) {
	t.Parallel()
	st, _ := keyFileStore(t)
	for _, cmd := range []string{"exit 3", "true"} {
		st.AddLeased("M", "", []string{"h.test"}, LeaseSpec{Every: time.Hour, Mint: cmd})
		sec, _ := st.Get("M")
		ls := st.Leases()
		if _, err := ls.Acquire(context.Background(), sec, "t", -1); !errors.Is(err, ErrMint) {
			t.Fatalf("%q: %v", cmd, err)
		}
		if list, _ := ls.List(); len(list) != 0 {
			t.Fatalf("%q left %+v", cmd, list)
		}
	}
}

// TestSweepRevokesOrphansAfterKill: a process holding a lease is killed
// with SIGKILL; the next sweep revokes its token and drops it from the
// ledger, and leaves the leases of a process still running. With the
// liveness check taken away (every lease looks orphaned) the sweep would
// revoke a live holder's token too: that is why it checks.
func TestSweepRevokesOrphansAfterKill(t *testing.T) {
	t.Parallel()
	st, home := keyFileStore(t)
	dir := t.TempDir()
	mint, revoke := mintScripts(t, dir)
	st.AddLeased("T", "", []string{"api.cloud.test"}, LeaseSpec{Every: time.Hour, Renewals: 1, Mint: mint, Revoke: revoke})
	cmd := exec.Command(os.Args[0], "-test.run=^TestLeaseHolderHelper$")
	cmd.Env = append(os.Environ(), "GO_WANT_HELPER_PROCESS=1", "KULE_TEST_HOME="+home, "KULE_SECRETS_KEYFILE=1")
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	if !sc.Scan() || sc.Text() != "held" {
		t.Fatalf("helper said %q", sc.Text())
	}
	// This process holds one too: it must survive the sweep.
	sec, _ := st.Get("T")
	ls := st.Leases()
	mine, err := ls.Acquire(context.Background(), sec, "live0001", -1)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	minted := lines(t, filepath.Join(dir, "minted"))
	if len(minted) != 2 || len(lines(t, filepath.Join(dir, "revoked"))) != 0 {
		t.Fatalf("minted %v before the sweep", minted)
	}
	swept, err := ls.Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(swept) != 1 || swept[0].Holder != "dead0001" {
		t.Fatalf("swept %+v", swept)
	}
	if got := lines(t, filepath.Join(dir, "revoked")); len(got) != 1 || got[0] != minted[0] {
		t.Fatalf("revoked %v, want the dead holder's %s", got, minted[0])
	}
	list, _ := ls.List()
	if len(list) != 1 || list[0].Holder != "live0001" {
		t.Fatalf("ledger after sweep %+v", list)
	}
	if _, err := mine.Value(context.Background()); err != nil {
		t.Fatalf("the live holder's lease after the sweep: %v", err)
	}
	mine.Release(context.Background())
}

// TestSweepUnguardedRevokesALiveHolder: with the liveness check taken
// away, a sweep revokes the token of a holder that still runs (what the
// check guards against).
func TestSweepUnguardedRevokesALiveHolder(t *testing.T) {
	st, _ := keyFileStore(t)
	dir := t.TempDir()
	mint, revoke := mintScripts(t, dir)
	st.AddLeased("T", "", []string{"api.cloud.test"}, LeaseSpec{Every: time.Hour, Mint: mint, Revoke: revoke})
	sec, _ := st.Get("T")
	ls := st.Leases()
	h, err := ls.Acquire(context.Background(), sec, "live0001", -1)
	if err != nil {
		t.Fatal(err)
	}
	sweepChecksAlive = false
	swept, _ := ls.Sweep(context.Background())
	sweepChecksAlive = true
	if len(swept) != 1 || len(lines(t, filepath.Join(dir, "revoked"))) != 1 {
		t.Fatalf("unguarded, the live lease should be swept: %+v", swept)
	}
	h.Release(context.Background())
}

func TestLeaseHolderHelper(t *testing.T) {
	if os.Getenv("GO_WANT_HELPER_PROCESS") != "1" {
		return
	}
	home := os.Getenv("KULE_TEST_HOME")
	st, err := Open(home)
	if err != nil {
		os.Stdout.WriteString(err.Error() + "\n")
		os.Exit(2)
	}
	sec, _ := st.Get("T")
	if _, err := st.Leases().Acquire(context.Background(), sec, "dead0001", -1); err != nil {
		os.Stdout.WriteString(err.Error() + "\n")
		os.Exit(2)
	}
	os.Stdout.WriteString("held\n")
	time.Sleep(time.Hour) // until killed
}

// TestGrantRenewsASpentLease: once spent, a lease stays refused until a
// person grants more; then it renews again.
func TestGrantRenewsASpentLease(t *testing.T) {
	t.Parallel()
	st, _ := keyFileStore(t)
	dir := t.TempDir()
	mint, revoke := mintScripts(t, dir)
	st.AddLeased("T", "", []string{"api.cloud.test"}, LeaseSpec{Every: time.Hour, Renewals: 0, Mint: mint, Revoke: revoke})
	sec, _ := st.Get("T")
	ls := st.Leases()
	c := &clock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	ls.Now = c.now
	ctx := context.Background()
	h, err := ls.Acquire(ctx, sec, "task0001", -1)
	if err != nil {
		t.Fatal(err)
	}
	c.add(time.Hour)
	if _, err := h.Value(ctx); !errors.Is(err, ErrLeaseSpent) {
		t.Fatalf("spent: %v", err)
	}
	if n, err := ls.Grant("task0001", "T", 1); err != nil || n != 1 {
		t.Fatalf("grant: %d, %v", n, err)
	}
	if v, err := h.Value(ctx); err != nil || !strings.HasPrefix(v, "tok-2-") {
		t.Fatalf("after the grant: %q, %v", v, err)
	}
	c.add(time.Hour)
	if _, err := h.Value(ctx); !errors.Is(err, ErrLeaseSpent) {
		t.Fatalf("the grant was one renewal: %v", err)
	}
	h.Release(ctx)
}

// FuzzReadLedger: whatever the ledger holds, reading it never panics, and
// what it reads back writes and reads the same.
func FuzzReadLedger(f *testing.F) {
	f.Add([]byte(`{"id":"ab","secret":"T","holder":"t","owner":1,"owner_start":"5","granted":"2030-01-01T00:00:00Z","expires":"2030-01-01T01:00:00Z","renewals_left":2,"renewed":0}` + "\n"))
	f.Add([]byte("\n\n{}\n"))
	f.Add([]byte(`{"id":"x","sealed":"AAAA"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "leases.jsonl")
		os.WriteFile(p, b, 0o600)
		list, err := readLedger(p)
		if err != nil {
			return
		}
		for _, l := range list {
			if l.ID == "" {
				t.Fatal("a lease without an id was read")
			}
		}
	})
}
