package agentrun

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kulehq/kule/kernel/internal/atomicfile"
	"github.com/kulehq/kule/kernel/internal/proxy"
	"github.com/kulehq/kule/kernel/internal/task"
)

// PlaceholdersFile, in Kule's home, keeps each agent's key placeholders.
//
// An agent may store the key it was given (Codex logs in with its api-key
// method and keeps the variable's value in its home): a placeholder made
// fresh for every run would be a foreign credential at the next. So an
// agent keeps one placeholder per key. It still holds nothing of the key,
// and only the task's proxy turns it into the key, at the key's hosts.
const PlaceholdersFile = "agent-placeholders.json"

// placeholders returns the agent's placeholder for each of names, making
// and keeping the missing ones.
func placeholders(kuleHome, agent string, names []string) (map[string]string, error) {
	path := filepath.Join(kuleHome, PlaceholdersFile)
	lock, err := task.LockFile(path + ".lock")
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	all := map[string]map[string]string{}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("run: %w", err)
	default:
		if err := json.Unmarshal(b, &all); err != nil {
			// Damaged: new placeholders serve as well (an agent that kept
			// an old one logs in again).
			all = map[string]map[string]string{}
		}
	}
	mine := all[agent]
	if mine == nil {
		mine = map[string]string{}
		all[agent] = mine
	}
	changed := false
	out := map[string]string{}
	for _, n := range names {
		p := mine[n]
		if !strings.HasPrefix(p, proxy.PlaceholderPrefix) {
			p = proxy.NewPlaceholder(n)
			mine[n], changed = p, true
		}
		out[n] = p
	}
	if changed {
		b, err := json.MarshalIndent(all, "", "  ")
		if err != nil {
			return nil, err
		}
		if err := atomicfile.Write(path, b, 0o600); err != nil {
			return nil, fmt.Errorf("run: %w", err)
		}
	}
	return out, nil
}
