package agents

import (
	"fmt"
	"time"

	"github.com/kulehq/kule/kernel/internal/lockfile"
)

// Approval pins one person's profile by its hash.
type Approval struct {
	Hash     string    `json:"sha256"` // hex
	Approved time.Time `json:"approved"`
}

// ApprovalsPath is where approvals are kept: $KULE_HOME/kule.lock, beside
// the plugins' approvals (see kernel/internal/lockfile).
func ApprovalsPath(kuleHome string) string { return lockfile.Path(kuleHome) }

func readApprovals(kuleHome string) (map[string]Approval, error) {
	l, err := lockfile.Read(kuleHome)
	if err != nil {
		return nil, fmt.Errorf("agents: approvals: %w (every person's profile waits for approval until it is fixed)", err)
	}
	m := make(map[string]Approval, len(l.Agents))
	for name, e := range l.Agents {
		m[name] = Approval{Hash: e.Hash(lockfile.SHA256), Approved: e.Approved}
	}
	return m, nil
}

// Approved reports whether p may run: a built-in as it ships always; a
// person's profile, or a built-in with a setting of theirs, when the lock
// file pins exactly its present hash.
func Approved(kuleHome string, p Profile) (bool, error) {
	if p.Builtin && p.Setting == "" {
		return true, nil
	}
	aps, err := readApprovals(kuleHome)
	if err != nil {
		return false, err
	}
	a, ok := aps[p.Name]
	return ok && a.Hash == p.Hash(), nil
}

// CheckApproved returns ErrNotApproved, with what to do, unless p may run.
func CheckApproved(kuleHome string, p Profile) error {
	ok, err := Approved(kuleHome, p)
	if err != nil {
		return err
	}
	if ok {
		return nil
	}
	aps, _ := readApprovals(kuleHome)
	if _, was := aps[p.Name]; was {
		return fmt.Errorf("%w: %s changed since it was approved; read it with `kule agents show %s`, then `kule agents approve %s`", ErrNotApproved, p.Name, p.Name, p.Name)
	}
	return fmt.Errorf("%w: %s opens holes in the sandbox; read it with `kule agents show %s`, then `kule agents approve %s`", ErrNotApproved, p.Name, p.Name, p.Name)
}

// Approve pins p's present hash. A profile that fails its checks cannot be
// approved.
func Approve(kuleHome string, p Profile, all []Profile) error {
	if p.Builtin && p.Setting == "" {
		return nil
	}
	if err := Validate(p, all); err != nil {
		return err
	}
	err := lockfile.Update(kuleHome, func(l *lockfile.Lock) error {
		l.Agents[p.Name] = lockfile.Entry{Hashes: []string{lockfile.Sum(lockfile.SHA256, p.Hash())}, Approved: time.Now().UTC()}
		return nil
	})
	if err != nil {
		return fmt.Errorf("agents: approve %s: %w", p.Name, err)
	}
	return nil
}
