package kernel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kulehq/kule/kernel/internal/acp"
	"github.com/kulehq/kule/kernel/internal/agents"
	"github.com/kulehq/kule/kernel/internal/atomicfile"
	"github.com/kulehq/kule/kernel/internal/budget"
	"github.com/kulehq/kule/kernel/internal/clone"
	"github.com/kulehq/kule/kernel/internal/config"
	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/group"
	"github.com/kulehq/kule/kernel/internal/limits"
	"github.com/kulehq/kule/kernel/internal/manifest"
	"github.com/kulehq/kule/kernel/internal/pluginhost"
	"github.com/kulehq/kule/kernel/internal/policy"
	"github.com/kulehq/kule/kernel/internal/relpath"
	"github.com/kulehq/kule/kernel/internal/review"
	"github.com/kulehq/kule/kernel/internal/runner"
	"github.com/kulehq/kule/kernel/internal/sandbox"
	"github.com/kulehq/kule/kernel/internal/sandboxlog"
	"github.com/kulehq/kule/kernel/internal/secrets"
	"github.com/kulehq/kule/kernel/internal/task"
)

// This file is what the daemon and its app (cmd/internal/daemon) use of the
// kernel. The daemon lives outside kernel/ and imports package kernel alone:
// every subsystem it reaches, it reaches through the names below, so the
// kernel's packages can move behind kernel/internal without the app
// noticing. Types that are the kernel's vocabulary (a task, an effect, a
// verdict, a limit) are aliases; jobs that need the home or a task's files
// are methods, so the app never builds a kernel path itself.

// The vocabulary the daemon's API speaks in.
type (
	// EffectCounts counts effects by kind.
	EffectCounts = effects.Counts
	LimitUsage   = limits.Usage
	LimitReason  = limits.Reason
	LimitRun     = limits.Run
	BudgetNotice = budget.Notice
	// AgentEvent is one thing an agent's turn did (text, a step, usage);
	// AgentQuestion is an agent's permission request, answered by an
	// AgentAskFunc with one of its PermissionOptions.
	AgentEvent    = acp.Event
	AgentQuestion = acp.Question
	AgentAskFunc  = acp.AskFunc
	// AgentAnswered is what an AgentAskFunc returns for an answer no
	// person gave (a wait that ran out): the step records who or what
	// answered.
	AgentAnswered = acp.Answered
	// AgentUsage is one usage record of an agent's turn (usage.jsonl).
	AgentUsage   = acp.Usage
	AgentProfile = agents.Profile
	AgentCheck   = agents.Status
	GroupStore   = group.Store
	// RememberedRule is one approval kept as a rule (rules.cedar).
	RememberedRule = policy.Remembered
	RunSpec        = runner.Spec
	DirectRunner   = runner.Direct
)

// Words of that vocabulary.
const (
	EffectDelete = effects.Delete
	EffectAdd    = effects.Add
	TypeFile     = effects.TypeFile

	OutcomePass = policy.Pass
	OutcomeAsk  = policy.Ask
	OutcomeDeny = policy.Deny

	// GroupOwnPolicy and GroupDefaultPolicy are a group's policy choices:
	// its own policy.cedar, or the home's.
	GroupOwnPolicy     = group.Own
	GroupDefaultPolicy = group.Default

	LimitReasonNone     = limits.ReasonNone
	LimitReasonTaskTime = limits.ReasonTaskTime

	// BudgetScopeTask names a task's own cap in a BudgetNotice;
	// BudgetSourceRun is the usage source of a run's start.
	BudgetScopeTask = budget.ScopeTask
	BudgetSourceRun = budget.SourceRun
	// BudgetTaskFile is a task's cap, in its task folder; AgentUsageFile its
	// agents' usage records.
	BudgetTaskFile = budget.TaskFile
	AgentUsageFile = acp.UsageFile

	AgentEventText       = acp.EventText
	AgentEventThought    = acp.EventThought
	AgentEventNotice     = acp.EventNotice
	AgentEventStepStart  = acp.EventStepStart
	AgentEventStepUpdate = acp.EventStepUpdate
	AgentEventStepEnd    = acp.EventStepEnd
	AgentEventPlan       = acp.EventPlan
	AgentEventUsage      = acp.EventUsage

	// SandboxOpening is the kind of a SandboxRecord for a refused opening;
	// SandboxAccessNote says what of a command's own refusals cannot be
	// listed.
	SandboxOpening    = sandboxlog.Opening
	SandboxAccessNote = sandboxlog.AccessNote
)

// PluginApprovalsPath is the file that keeps the approvals of a Kule
// home's plugins.
func PluginApprovalsPath(kuleHome string) string { return pluginhost.ApprovalsPath(kuleHome) }

// PolicyChoices are the built-in policies a home may choose.

// Errors of the subsystems a client tests for, re-exported so a client
// needs no subsystem's package to test for them.
var (
	ErrPolicy         = policy.ErrPolicy
	ErrTaskNotFound   = task.ErrNotFound
	ErrBadTaskID      = task.ErrBadID
	ErrAmbiguousTask  = task.ErrAmbiguous
	ErrBadGroup       = group.ErrBadGroup
	ErrBadGroupPolicy = group.ErrBadPolicy
	ErrNoOwnPolicy    = group.ErrNoOwn
	ErrLimitStopped   = limits.ErrStopped
	ErrTaskTimeSpent  = limits.ErrTaskTimeSpent
	ErrBudgetSpent    = budget.ErrSpent
	ErrBudgetCurrency = budget.ErrCurrency
)

// EffectsSummary is the one-line summary of es ("2 modified, 1 added").
func EffectsSummary(es []Effect) string { return effects.Summary(es) }

// CheckRelPath reports whether rel is a clean relative path that stays
// inside its root: not empty, not absolute, no ".", ".." or empty element,
// no NUL.
func CheckRelPath(rel string) error { return relpath.Check(rel) }

// WriteFileAtomic replaces path with b (permission bits perm) through a
// temporary file renamed over it, so a reader sees the old file or the new
// one, never a part.
func WriteFileAtomic(path string, b []byte, perm os.FileMode) error {
	return atomicfile.Write(path, b, perm)
}

// SandboxMissing lists what this machine lacks to run commands isolated;
// empty when the sandbox works.
func SandboxMissing() []string { return sandbox.Probe().Missing() }

// CheckAgents says of each agent in set whether it can start here and what
// the others need.
func CheckAgents(set *AgentSet, o AgentCheckOptions) []AgentCheck { return agents.Check(set, o) }

// EntitiesOf names what changed inside each reviewable file of st (at most
// max bytes read of each) with the differs of a plugin host, each out of
// process: the names by path, as "func Parse" or "# Section" read. host is
// asked for only when some file has changes to name; its release runs when
// the naming is done.
func EntitiesOf(ctx context.Context, st *Status, max int64, host func() (h *PluginHost, release func())) map[string][]string {
	cs := ChangesOf(st, max)
	if len(cs) == 0 {
		return nil
	}
	h, release := host()
	defer release()
	rv := review.Compute(ctx, review.FromHost(h), cs)
	out := map[string][]string{}
	for _, f := range rv.Files {
		for _, en := range f.Entities {
			out[f.Path] = append(out[f.Path], en.String())
		}
	}
	return out
}

// Tasks lists the home's tasks in the person's order, then by creation.
func (k *Kernel) Tasks() ([]*Task, error) { return k.Store().List() }

// TaskIDs lists the ids of the home's tasks, sorted.
func (k *Kernel) TaskIDs() ([]string, error) { return k.Store().IDs() }

// TaskDir is the folder of the task with id (task.json, its logs).
func (k *Kernel) TaskDir(id string) string { return filepath.Join(k.Store().TasksDir(), id) }

// LoadTask reads task id's task.json.
func (k *Kernel) LoadTask(id string) (*Task, error) { return k.Store().Load(id) }

// SaveTask writes t's task.json.
func (k *Kernel) SaveTask(t *Task) error { return k.Store().Save(t) }

// EditTask changes task id's settings under its lock: it reads task.json
// afresh, lets edit change it, and writes it back. It returns the task as
// saved.
func (k *Kernel) EditTask(id string, edit func(*Task)) (*Task, error) {
	t, err := k.Store().Load(id)
	if err != nil {
		return nil, err
	}
	l, err := task.LockFile(t.Paths.Lock)
	if err != nil {
		return nil, err
	}
	defer l.Unlock()
	fresh, err := k.Store().Load(id)
	if err != nil {
		return nil, err
	}
	edit(fresh)
	if err := k.Store().Save(fresh); err != nil {
		return nil, err
	}
	return fresh, nil
}

// Groups is the home's groups of tasks.
func (k *Kernel) Groups() *GroupStore { return group.Open(k.Store().Root) }

// DeleteGroup removes group id; its tasks go back to no group.
func (k *Kernel) DeleteGroup(id string) error {
	return group.Open(k.Store().Root).Delete(id, k.Store())
}

// Settings reads the home's config.toml (defaults where it is missing).
func (k *Kernel) Settings() (*Settings, error) { return config.Load(k.Store().Root) }

// SaveSettings writes the home's config.toml.
func (k *Kernel) SaveSettings(s *Settings) error { return config.Save(k.Store().Root, s) }

// PersonPolicyPath is the person's own policy.cedar, which replaces the
// built-in policies when it exists.
func (k *Kernel) PersonPolicyPath() string { return policy.PersonPath(k.Store().Root) }

// TaskUsage is t's spending against its caps at now.
func (k *Kernel) TaskUsage(t *Task, now time.Time) (*BudgetSummary, error) {
	return budget.ForTask(k.Store().Root, t.Paths.Dir, now)
}

// SandboxRecords reads t's sandbox log from offset; damaged lines are
// returned apart, never hiding the others.
func (k *Kernel) SandboxRecords(t *Task, offset int64) (recs []SandboxRecord, damaged []error, err error) {
	return sandboxlog.Read(t.Paths.Dir, offset)
}

// SandboxLogSize is the size of t's sandbox log: the offset a later
// SandboxRecords reads what was added from.
func (k *Kernel) SandboxLogSize(t *Task) int64 { return sandboxlog.Size(t.Paths.Dir) }

// KeptSecrets opens the person's secrets store once and returns a lookup
// that reports whether it keeps a secret named name with a value; nil when
// the store cannot be opened (then only the environment holds keys).
func (k *Kernel) KeptSecrets() func(name string) bool {
	store, err := secrets.Open(k.Store().Root)
	if err != nil {
		return nil
	}
	return func(name string) bool { s, err := store.Get(name); return err == nil && s.Value != "" }
}

// RememberPaths keeps, as rules for t's folder, the approvals in j of the
// given paths that the commit applied. It returns the rules added, and the
// paths whose approval cannot be written as a rule (approved once only).
func (k *Kernel) RememberPaths(t *Task, j *Judgement, applied []Effect, paths []string) (added, notKept []string, err error) {
	if j == nil {
		return nil, nil, nil
	}
	done := map[string]bool{}
	for _, e := range applied {
		if slices.Contains(paths, e.Path) {
			done[e.Path] = true
		}
	}
	var vs []policy.Verdict
	for _, v := range j.Ruling.Verdicts {
		if i := v.Request.Effect; i >= 0 && i < len(j.Pending) && done[j.Pending[i].Path] {
			vs = append(vs, v)
		}
	}
	rs, notKept, err := policy.Remember(k.Store().Root, t.Folder, vs)
	if err != nil {
		return nil, nil, err
	}
	added = []string{}
	for _, r := range rs {
		added = append(added, r.String())
	}
	return added, notKept, nil
}

// RememberHost keeps a connection to hostPort as allowed for t's folder (a
// rule in rules.cedar that the next run's proxy lets pass).
func (k *Kernel) RememberHost(t *Task, hostPort string) error {
	_, err := policy.AllowHost(k.Store().Root, t.Folder, hostPort)
	return err
}

// HostRemembered reports whether a connection to hostPort is remembered as
// allowed for t's folder.
func (k *Kernel) HostRemembered(t *Task, hostPort string) bool {
	h, port, err := policy.SplitHostPort(hostPort)
	if err != nil {
		return false
	}
	rs, err := policy.ReadRemembered(k.Store().Root)
	if err != nil {
		return false
	}
	want := fmt.Sprintf("%s:%d", h, port)
	for _, x := range rs {
		if x.Host && x.Subject == want && sameFolder(x.Rule.Folder, t.Folder) {
			return true
		}
	}
	return false
}

func sameFolder(a, b string) bool { return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/") }

// OpenBefore opens rel as t's base holds it: the file as it was before the
// task changed it. A file larger than max bytes is ErrTooLarge, before
// anything is opened. A base that keeps no copy of the file reads it from
// the folder, only if the folder still holds what the base recorded; it
// never follows a link there.
func (k *Kernel) OpenBefore(t *Task, rel string, max int64) (io.ReadCloser, error) {
	m, err := manifest.Load(filepath.Join(t.Paths.Base, "manifest"))
	if err != nil {
		return nil, err
	}
	e, ok := m.Get(rel)
	if !ok || e.Type != effects.TypeFile {
		return nil, fmt.Errorf("%w: no earlier version", os.ErrNotExist)
	}
	if e.Size > max {
		return nil, fmt.Errorf("%w: %s (%d bytes)", ErrTooLarge, rel, e.Size)
	}
	rc, err := baseOf(t).Open(e) // the base's content, or the folder's file while it still holds it
	if errors.Is(err, clone.ErrNotKept) {
		return nil, fmt.Errorf("%w: the base keeps no copy of it and the folder changed", os.ErrNotExist)
	}
	if err != nil {
		return nil, err
	}
	return rc, nil
}

// ValidatePolicy reads src (named name in errors) as Cedar policy text and
// says what is wrong with it, if anything.
func ValidatePolicy(name string, src []byte) error { return policy.Validate(name, src) }

// RememberedRules lists the approvals kept as rules, as `kule rules` numbers
// them.
func (k *Kernel) RememberedRules() ([]RememberedRule, error) {
	return policy.ReadRemembered(k.Store().Root)
}

// AgentsFile is the person's own agent profiles (agents.toml).
func (k *Kernel) AgentsFile() string { return agents.PersonalPath(k.Store().Root) }

// LoadAgents reads the built-in agent profiles (each *.toml in builtins)
// and the person's AgentsFile, and checks each.
func (k *Kernel) LoadAgents(builtins fs.FS) (*AgentSet, error) {
	return loadAgents(builtins, k.Store().Root)
}

// ApproveAgent approves profile p, exactly as it is now, among all.
func (k *Kernel) ApproveAgent(p AgentProfile, all []AgentProfile) error {
	return agents.Approve(k.Store().Root, p, all)
}

// SetTaskCap sets (nil: removes) what t may spend.
func (k *Kernel) SetTaskCap(t *Task, m *Money) error { return budget.SetTaskCap(t.Paths.Dir, m) }

// SetDailyCap sets (nil: removes) what all tasks of the home may spend a day.
func (k *Kernel) SetDailyCap(m *Money) error { return budget.SetDailyCap(k.Store().Root, m) }
