package acp

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kulehq/kule/kernel/internal/atomicfile"
)

// The files a run keeps in the task's directory.
const (
	StepsFile   = "steps.jsonl"
	UsageFile   = "usage.jsonl"
	SessionFile = "agent-session.json"
)

// SessionRecord is what a later `kule run` on the task needs to continue
// the conversation.
type SessionRecord struct {
	Agent   string `json:"agent"`
	Session string `json:"session"`
	Cwd     string `json:"cwd"`
}

// SaveSession writes the session record of a task atomically.
func SaveSession(taskDir string, r SessionRecord) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	p := filepath.Join(taskDir, SessionFile)
	if err := atomicfile.Write(p, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("acp: save session: %w", err)
	}
	return nil
}

// LoadSession reads a task's session record; ok is false when there is none.
func LoadSession(taskDir string) (r SessionRecord, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(taskDir, SessionFile))
	if errors.Is(err, fs.ErrNotExist) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("acp: session record: %w", err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, false, fmt.Errorf("acp: session record %s is damaged (a new session will start): %w", filepath.Join(taskDir, SessionFile), err)
	}
	return r, r.Session != "", nil
}

// ReadSteps reads steps.jsonl. A damaged line (a crash mid-write) is
// reported in bad and skipped; the others are kept.
func ReadSteps(path string) (steps []Step, bad int, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("acp: steps: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var s Step
		if json.Unmarshal(sc.Bytes(), &s) != nil {
			bad++
			continue
		}
		steps = append(steps, s)
	}
	if err := sc.Err(); err != nil {
		return steps, bad, fmt.Errorf("acp: steps: %w", err)
	}
	return steps, bad, nil
}
