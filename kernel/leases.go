package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/kulehq/kule/kernel/internal/atomicfile"
	"github.com/kulehq/kule/kernel/internal/proxy"
	"github.com/kulehq/kule/kernel/internal/secrets"
	"github.com/kulehq/kule/kernel/internal/task"
)

// Leased secrets (secrets.Leases): each run's proxy acquires a lease of
// every leased secret for the run's task and releases it (revoking a
// minted token) when it closes. What is left of the budget is kept per
// task in tasks/<id>/leases.json, never the credential, so a resumed or
// later run of the task acquires a fresh lease under what is left.

// Lease types, for the CLI and the daemon.
type (
	Lease     = secrets.Lease
	LeaseSpec = secrets.LeaseSpec
)

// LeaseHolderAlive reports whether the process holding l still runs.
func LeaseHolderAlive(l Lease) bool { return secrets.Alive(l) }

// ErrLeaseSpent is [secrets.ErrLeaseSpent].
var ErrLeaseSpent = secrets.ErrLeaseSpent

func leaseBudgetPath(t *task.Task) string { return filepath.Join(t.Paths.Dir, "leases.json") }

var leaseBudgetMu sync.Mutex

// leaseBudget is what t has left of each leased secret's renewals; a
// secret it never held is absent.
func leaseBudget(t *task.Task) map[string]int {
	out := map[string]int{}
	if b, err := os.ReadFile(leaseBudgetPath(t)); err == nil {
		_ = json.Unmarshal(b, &out) // Kule's own file; damaged reads as none kept
	}
	return out
}

func saveLeaseBudget(t *task.Task, name string, left int) error {
	leaseBudgetMu.Lock()
	defer leaseBudgetMu.Unlock()
	m := leaseBudget(t)
	if v, ok := m[name]; ok && v == left {
		return nil
	}
	m[name] = left
	b, _ := json.Marshal(m)
	return atomicfile.Write(leaseBudgetPath(t), b, 0o600)
}

// leaseSecret acquires t's lease of s and returns it as the proxy's
// secret: its value asked of the lease at each request, released when the
// proxy closes.
func (k *Kernel) leaseSecret(ctx context.Context, t *task.Task, store *secrets.Store, s secrets.Secret) (proxy.Secret, error) {
	left := -1
	if v, ok := leaseBudget(t)[s.Name]; ok {
		left = v
	}
	h, err := store.Leases().Acquire(ctx, s, t.ID, left)
	if err != nil {
		return proxy.Secret{}, err
	}
	first, err := h.Value(ctx)
	if err == nil {
		err = saveLeaseBudget(t, s.Name, h.Left())
	}
	if err != nil {
		_ = h.Release(context.Background())
		return proxy.Secret{}, fmt.Errorf("secrets: lease %s: %w", s.Name, err)
	}
	var once sync.Once
	return proxy.Secret{
		Name: s.Name, Hosts: s.Hosts, Value: first,
		Lease: func() (string, error) {
			v, err := h.Value(context.Background())
			if serr := saveLeaseBudget(t, s.Name, h.Left()); err == nil && serr != nil {
				return "", fmt.Errorf("secrets: lease %s: the budget could not be kept: %w", s.Name, serr)
			}
			return v, err
		},
		Release: func() {
			once.Do(func() {
				err := h.Release(context.Background())
				if err != nil && k.cfg.Logger != nil {
					k.cfg.Logger.Warn("secrets: a lease was not revoked; the next sweep tries again", "secret", s.Name, "task", t.ID, "error", err.Error())
				}
			})
		},
	}, nil
}

// Leases lists the leases held now (the ledger), oldest first.
func (k *Kernel) Leases() ([]secrets.Lease, error) {
	store, err := secrets.Open(k.store.Root)
	if err != nil {
		return nil, err
	}
	return store.Leases().List()
}

// SweepLeases revokes the leases whose holder died (a crash, a kill -9)
// and drops them from the ledger; the daemon calls it as it starts.
func (k *Kernel) SweepLeases(ctx context.Context) ([]secrets.Lease, error) {
	if _, err := os.Stat(secrets.LedgerPath(k.store.Root)); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	store, err := secrets.Open(k.store.Root)
	if err != nil {
		return nil, err
	}
	return store.Leases().Sweep(ctx)
}

// GrantLease gives t's leases of secret n more renewals: the answer to a
// spent lease. The leases held now take them at once; a later run of t
// starts with them too. It returns how many held leases it changed.
func (k *Kernel) GrantLease(t *task.Task, secret string, n int) (int, error) {
	store, err := secrets.Open(k.store.Root)
	if err != nil {
		return 0, err
	}
	if _, err := store.Get(secret); err != nil {
		return 0, err
	}
	changed, err := store.Leases().Grant(t.ID, secret, n)
	if err != nil {
		return 0, err
	}
	leaseBudgetMu.Lock()
	left, ok := leaseBudget(t)[secret]
	leaseBudgetMu.Unlock()
	if ok {
		if err := saveLeaseBudget(t, secret, left+n); err != nil {
			return changed, err
		}
	}
	return changed, nil
}
