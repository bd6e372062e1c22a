package pluginhost

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// ApprovalsFile is the approval store inside $KULE_HOME/plugins.
const ApprovalsFile = "approvals.json"

// Approval pins what a person approved: a plugin's name, kind and exact
// version, the sha256 of its executable and of its manifest. A launch needs
// all of them to match.
type Approval struct {
	Name           string    `json:"name"`
	Kind           string    `json:"kind"`
	Version        string    `json:"version"`
	SHA256         string    `json:"sha256"`
	ManifestSHA256 string    `json:"manifest_sha256"`
	ApprovedAt     time.Time `json:"approved_at"`
}

type approvalsDoc struct {
	Plugins map[string]Approval `json:"plugins"`
}

func (h *Host) approvalsPath() string { return filepath.Join(h.pluginsDir(), ApprovalsFile) }

// approvals reads the approval store; a missing store approves nothing.
func (h *Host) approvals() (map[string]Approval, error) {
	data, err := os.ReadFile(h.approvalsPath())
	if errors.Is(err, os.ErrNotExist) {
		return map[string]Approval{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrApprovals, err)
	}
	var doc approvalsDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%w: %s: %v (fix or remove it; every plugin then waits for approval again)", ErrApprovals, h.approvalsPath(), err)
	}
	if doc.Plugins == nil {
		doc.Plugins = map[string]Approval{}
	}
	return doc.Plugins, nil
}

// saveApprovals writes the store atomically, readable by its owner only.
func (h *Host) saveApprovals(m map[string]Approval) error {
	if err := os.MkdirAll(h.pluginsDir(), 0o700); err != nil {
		return fmt.Errorf("%w: %v", ErrApprovals, err)
	}
	data, err := json.MarshalIndent(approvalsDoc{Plugins: m}, "", "  ")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrApprovals, err)
	}
	f, err := os.CreateTemp(h.pluginsDir(), ".approvals-*")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrApprovals, err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(append(data, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("%w: %v", ErrApprovals, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("%w: %v", ErrApprovals, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("%w: %v", ErrApprovals, err)
	}
	if err := os.Rename(f.Name(), h.approvalsPath()); err != nil {
		return fmt.Errorf("%w: %v", ErrApprovals, err)
	}
	return nil
}
