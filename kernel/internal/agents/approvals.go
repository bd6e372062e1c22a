package agents

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Approval pins one person's profile by its hash.
type Approval struct {
	Hash     string    `json:"sha256"`
	Approved time.Time `json:"approved"`
}

type approvalsFile struct {
	Agents map[string]Approval `json:"agents"`
}

// ApprovalsPath is $KULE_HOME/approvals.json.
func ApprovalsPath(kuleHome string) string { return filepath.Join(kuleHome, "approvals.json") }

func readApprovals(kuleHome string) (approvalsFile, error) {
	f := approvalsFile{Agents: map[string]Approval{}}
	b, err := os.ReadFile(ApprovalsPath(kuleHome))
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("agents: approvals: %w", err)
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return f, fmt.Errorf("agents: approvals: %s is damaged (every person's profile waits for approval again): %w", ApprovalsPath(kuleHome), err)
	}
	if f.Agents == nil {
		f.Agents = map[string]Approval{}
	}
	return f, nil
}

// Approved reports whether p may run: a built-in always, a person's profile
// when approvals.json pins exactly its present hash.
func Approved(kuleHome string, p Profile) (bool, error) {
	if p.Builtin {
		return true, nil
	}
	f, err := readApprovals(kuleHome)
	if err != nil {
		return false, err
	}
	a, ok := f.Agents[p.Name]
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
	f, _ := readApprovals(kuleHome)
	if _, was := f.Agents[p.Name]; was {
		return fmt.Errorf("%w: %s changed since it was approved; read it with `kule agents show %s`, then `kule agents approve %s`", ErrNotApproved, p.Name, p.Name, p.Name)
	}
	return fmt.Errorf("%w: %s opens holes in the sandbox; read it with `kule agents show %s`, then `kule agents approve %s`", ErrNotApproved, p.Name, p.Name, p.Name)
}

// Approve pins p's present hash. A profile that fails its checks cannot be
// approved.
func Approve(kuleHome string, p Profile, all []Profile) error {
	if p.Builtin {
		return nil
	}
	if err := Validate(p, all); err != nil {
		return err
	}
	f, err := readApprovals(kuleHome)
	if err != nil {
		return err
	}
	f.Agents[p.Name] = Approval{Hash: p.Hash(), Approved: time.Now().UTC()}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	tmp := ApprovalsPath(kuleHome) + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("agents: approve: %w", err)
	}
	if err := os.Rename(tmp, ApprovalsPath(kuleHome)); err != nil {
		return fmt.Errorf("agents: approve: %w", err)
	}
	return nil
}
