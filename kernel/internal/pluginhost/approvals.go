package pluginhost

import (
	"fmt"
	"time"

	"github.com/kulehq/kule/kernel/internal/lockfile"
)

// Approval pins what a person approved: a plugin's name, kind and exact
// version, the sha256 of its executable and of its manifest. A launch needs
// all of them to match. Approvals are kept in $KULE_HOME/kule.lock (see
// kernel/internal/lockfile), beside the agent profiles' approvals.
type Approval struct {
	Name           string    `json:"name"`
	Kind           string    `json:"kind"`
	Version        string    `json:"version"`
	SHA256         string    `json:"sha256"`          // hex
	ManifestSHA256 string    `json:"manifest_sha256"` // hex
	ApprovedAt     time.Time `json:"approved_at"`
}

// ApprovalsPath is the approval store under the Kule home root:
// $KULE_HOME/kule.lock, which a launch reads every time.
func ApprovalsPath(home string) string { return lockfile.Path(home) }

func (h *Host) approvalsPath() string { return ApprovalsPath(h.home) }

// approvals reads the plugins' approvals; a missing store approves nothing.
func (h *Host) approvals() (map[string]Approval, error) {
	l, err := lockfile.Read(h.home)
	if err != nil {
		return nil, fmt.Errorf("%w: %v (every plugin waits for approval until it is fixed)", ErrApprovals, err)
	}
	m := make(map[string]Approval, len(l.Plugins))
	for name, e := range l.Plugins {
		m[name] = Approval{Name: name, Kind: e.Kind, Version: e.Version, SHA256: e.Hash(lockfile.SHA256),
			ManifestSHA256: lockfile.Digest(lockfile.SHA256, e.Manifest), ApprovedAt: e.Approved}
	}
	return m, nil
}

// setApproval records a as name's approval, or forgets name's when a is nil.
func (h *Host) setApproval(name string, a *Approval) error {
	err := lockfile.Update(h.home, func(l *lockfile.Lock) error {
		if a == nil {
			if _, ok := l.Plugins[name]; !ok {
				return lockfile.ErrNoChange
			}
			delete(l.Plugins, name)
			return nil
		}
		l.Plugins[name] = lockfile.Entry{Kind: a.Kind, Version: a.Version,
			Hashes:   []string{lockfile.Sum(lockfile.SHA256, a.SHA256)},
			Manifest: lockfile.Sum(lockfile.SHA256, a.ManifestSHA256), Approved: a.ApprovedAt.UTC()}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w: %v", ErrApprovals, err)
	}
	return nil
}
