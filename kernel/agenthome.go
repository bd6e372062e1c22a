package kernel

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kulehq/kule/kernel/internal/homelayer"
	"github.com/kulehq/kule/kernel/internal/policy"
	"github.com/kulehq/kule/kernel/internal/task"
)

// What a run changed of an agent's instructions and settings in its home
// (kernel/agentrun takes it out after the run) is kept in the task for the
// person: a home layer of its own for each agent, holding only the paths
// runs changed, against the home Kule keeps for the agent. The person
// reviews and applies it with the home layer's rules, as a change in their
// own home: diff, apply (only while the kept home holds what it held when
// the change was kept), undo. Nothing of it reaches a run before an apply.
const (
	agentChangesDir = "agent-changes" // in the task's own directory, which no run opens
	agentAppliedDir = "agent-applied" // what an apply replaced, for undo
)

// AgentChangeLayer is the layer in which the task keeps what runs of agent
// changed in its home.
func AgentChangeLayer(t *task.Task, agent string) homelayer.Layer {
	dir := filepath.Join(t.Paths.Dir, agentChangesDir)
	return homelayer.Layer{Dir: filepath.Join(dir, agent), Record: filepath.Join(dir, agent+".json")}
}

// TrackAgentChange records that the task now keeps a run's version of rel
// (in the agent's own home) in AgentChangeLayer, as a change of what home,
// the home Kule keeps for the agent, holds there now.
func TrackAgentChange(t *task.Task, agent, home, rel string) error {
	return homelayer.Track(AgentChangeLayer(t, agent), home, rel)
}

// AgentChange is one path a run changed in an agent's home and the task
// keeps for review.
type AgentChange struct {
	Agent string `json:"agent"`
	Home  string `json:"home"` // the home Kule keeps for the agent, where an apply writes
	homelayer.Change
}

// AgentChanges lists what runs of the task changed in agents' homes and
// the task keeps for review, by agent and path.
func AgentChanges(t *task.Task) ([]AgentChange, error) {
	ents, err := os.ReadDir(filepath.Join(t.Paths.Dir, agentChangesDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []AgentChange
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !validAgentName(name) {
			continue
		}
		l := AgentChangeLayer(t, name)
		home, err := homelayer.HomeOf(l)
		if err != nil {
			return out, err
		}
		ch, err := homelayer.Changes(l)
		if err != nil {
			return out, fmt.Errorf("%s's kept changes: %w", name, err)
		}
		for _, c := range ch {
			out = append(out, AgentChange{Agent: name, Home: home, Change: c})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Agent < out[j].Agent })
	return out, nil
}

// AgentChangeDiff returns what the home Kule keeps for agent holds at rel
// and the run's version the task keeps.
func AgentChangeDiff(t *task.Task, agent, rel string) (kept, run []byte, err error) {
	if err := knownAgentChanges(t, agent); err != nil {
		return nil, nil, err
	}
	return homelayer.Diff(AgentChangeLayer(t, agent), rel)
}

// ApplyAgentChange puts the run's version of rel into the home Kule keeps
// for agent, where the next run reads it: the person's act, after its diff.
// The policy judges it as the write to the person's home it stands for
// (rel under the agent's home_of: .claude/settings.json); one it denies is
// never applied, nor any under a policy that cannot be read.
func (k *Kernel) ApplyAgentChange(t *task.Task, agent, rel string) error {
	if err := knownAgentChanges(t, agent); err != nil {
		return err
	}
	asHome := rel
	if set, err := k.Agents(); err == nil {
		// A profile with a problem (not approved since it changed) still
		// says where its home lies.
		if p, _ := set.Get(agent); p.Name == agent && p.HomeOf != "" {
			asHome = path.Join(p.HomeOf, rel)
		}
	}
	v, err := k.JudgeHome(t, []string{asHome})
	if err != nil {
		return fmt.Errorf("home: %w; nothing was applied and %s's home is as it was", err, agent)
	}
	if v[0].Outcome == policy.Deny {
		return fmt.Errorf("home: the policy denies ~/%s (%s: %s); nothing was applied and %s's home is as it was", asHome, strings.Join(v[0].Rules, ", "), v[0].Reason, agent)
	}
	return homelayer.Apply(AgentChangeLayer(t, agent), filepath.Join(t.Paths.Dir, agentAppliedDir, agent), rel)
}

// UndoAgentChange takes the task's last apply to agent's kept home back
// and says which path.
func (k *Kernel) UndoAgentChange(t *task.Task, agent string) (string, error) {
	if err := knownAgentChanges(t, agent); err != nil {
		return "", err
	}
	return homelayer.Undo(AgentChangeLayer(t, agent), filepath.Join(t.Paths.Dir, agentAppliedDir, agent))
}

// KeepsAgentChanges reports whether runs of agent in t changed its home
// and the task keeps that for review.
func KeepsAgentChanges(t *task.Task, agent string) bool { return knownAgentChanges(t, agent) == nil }

// knownAgentChanges refuses an agent the task keeps no changes of (a name
// that is no agent's, or one whose runs changed nothing in its home).
func knownAgentChanges(t *task.Task, agent string) error {
	if validAgentName(agent) {
		if _, err := os.Stat(AgentChangeLayer(t, agent).Record); err == nil {
			return nil
		}
	}
	return fmt.Errorf("no run of task %s changed %q's home: nothing of it is kept for review", t.ID, agent)
}

// validAgentName: a name that stays one folder inside the task's.
func validAgentName(name string) bool {
	return name != "" && filepath.IsLocal(name) && !strings.ContainsAny(name, `/\`) && !strings.HasPrefix(name, ".")
}
