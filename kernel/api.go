package kernel

// This file is the kernel's API index for its clients (cmd/kule, the
// sandbox's helper, the daemon once it lives beside the CLI): every type,
// value and function of the kernel's own packages that a client uses is
// named here, grouped by the package that implements it. Those packages
// live under kernel/internal and no client imports them; a client that
// needs more of them gets a name here (or, better, a Kernel method that
// does the work). kernel/agentrun is not here: it is built on the Kernel,
// so this package cannot name it without an import cycle.

import (
	"context"
	"io"
	"io/fs"
	"time"

	"github.com/kulehq/kule/kernel/internal/acp"
	"github.com/kulehq/kule/kernel/internal/agents"
	"github.com/kulehq/kule/kernel/internal/budget"
	"github.com/kulehq/kule/kernel/internal/config"
	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/extensions"
	"github.com/kulehq/kule/kernel/internal/group"
	"github.com/kulehq/kule/kernel/internal/history"
	"github.com/kulehq/kule/kernel/internal/homelayer"
	"github.com/kulehq/kule/kernel/internal/limits"
	"github.com/kulehq/kule/kernel/internal/memory"
	"github.com/kulehq/kule/kernel/internal/pluginhost"
	"github.com/kulehq/kule/kernel/internal/policy"
	"github.com/kulehq/kule/kernel/internal/relpath"
	"github.com/kulehq/kule/kernel/internal/reveal"
	"github.com/kulehq/kule/kernel/internal/review"
	"github.com/kulehq/kule/kernel/internal/runner"
	"github.com/kulehq/kule/kernel/internal/sandbox"
	"github.com/kulehq/kule/kernel/internal/sandboxlog"
	"github.com/kulehq/kule/kernel/internal/secrets"
	"github.com/kulehq/kule/kernel/internal/task"
	"github.com/kulehq/kule/kernel/internal/termsafe"
	"github.com/kulehq/kule/kernel/internal/walk"
)

// acp (kernel/internal/acp) is Kule's client for the Agent Client Protocol (ACP v1):
// newline-delimited JSON-RPC 2.0 over an agent's stdin and stdout.

// AskFunc puts a permission question to the person. See [acp.AskFunc].
type AskFunc = acp.AskFunc

// Event is what the client streams while a turn runs. See [acp.Event].
type Event = acp.Event

// EventNotice is [acp.EventNotice]: something the person should know (a bad line from the agent).
const EventNotice = acp.EventNotice

// EventPermission is [acp.EventPermission]: an event type.
const EventPermission = acp.EventPermission

// EventRaw is [acp.EventRaw]: an update kind Kule does not know, kept as a step.
const EventRaw = acp.EventRaw

// EventStepEnd is [acp.EventStepEnd]: a tool call ended; Step.Effects filled.
const EventStepEnd = acp.EventStepEnd

// EventStepStart is [acp.EventStepStart]: a tool call began.
const EventStepStart = acp.EventStepStart

// EventText is [acp.EventText]: agent_message_chunk.
const EventText = acp.EventText

// PermissionOption is one answer the agent offers to a permission question. See
// [acp.PermissionOption].
type PermissionOption = acp.PermissionOption

// Question is a permission question as the person sees it. See [acp.Question].
type Question = acp.Question

// ReadSteps reads steps.jsonl. See [acp.ReadSteps].
func ReadSteps(path string) ([]acp.Step, int, error) { return acp.ReadSteps(path) }

// Step is one line of steps.jsonl: a tool call the agent made, or an update of a kind Kule does
// not know, kept whole. See [acp.Step].
type Step = acp.Step

// StepsFile is [acp.StepsFile]: one of the files a run keeps in the task's directory.
const StepsFile = acp.StepsFile

// agents (kernel/internal/agents) keeps the profiles of the agents Kule can run over ACP: the
// built-in ones and a person's own ($KULE_HOME/agents.toml), the checks that refuse a profile
// opening too much, the approvals that pin each person's profile by hash, the ACP registry a
// profile can be drafted from, and the once-per-version install of an npx agent.

// AddAgentHosts adds hosts to the hosts of the person's profile called name in agents.toml,
// keeping the rest of the file (comments too) as it is. See [agents.AddHosts].
func AddAgentHosts(kuleHome string, name string, hosts []string) ([]string, error) {
	return agents.AddHosts(kuleHome, name, hosts)
}

// SetAgent changes one setting of an agent's profile without copying it (kule agents set NAME
// base_url=URL), in $KULE_HOME/agent-settings.toml; the changed profile waits for approval. See
// [agents.SetSetting].
func SetAgent(kuleHome string, set *agents.Set, name, key, value string) (agents.Profile, error) {
	return agents.SetSetting(kuleHome, set, name, key, value)
}

// CheckAppendAgent returns why AppendPersonalAgent would refuse p. See [agents.CheckAppend].
func CheckAppendAgent(p agents.Profile, all []agents.Profile) error {
	return agents.CheckAppend(p, all)
}

// AppendPersonalAgent adds a profile to agents.toml (creating it), after the same checks Load
// makes. See [agents.AppendPersonal].
func AppendPersonalAgent(kuleHome string, p agents.Profile, all []agents.Profile) error {
	return agents.AppendPersonal(kuleHome, p, all)
}

// ApproveAgent pins p's present hash. See [agents.Approve].
func ApproveAgent(kuleHome string, p agents.Profile, all []agents.Profile) error {
	return agents.Approve(kuleHome, p, all)
}

// CheckAgent looks at every profile: refused, approved, what is missing, how it would log in. See
// [agents.Check].
func CheckAgent(set *agents.Set, o agents.CheckOptions) []agents.Status { return agents.Check(set, o) }

// CheckAgentApproved returns ErrNotApproved, with what to do, unless p may run. See
// [agents.CheckApproved].
func CheckAgentApproved(kuleHome string, p agents.Profile) error {
	return agents.CheckApproved(kuleHome, p)
}

// AgentCheckOptions are what Check needs beyond the profiles. See [agents.CheckOptions].
type AgentCheckOptions = agents.CheckOptions

// DraftAgent makes a profile from a registry entry. See [agents.Draft].
func DraftAgent(e agents.RegistryEntry) (agents.Profile, []string, error) { return agents.Draft(e) }

// AgentLaunch returns the argv that starts the profile's agent: an npx package becomes node and
// its installed script (installing it first when install is true); any other command is returned
// as it is. See [agents.Launch].
func AgentLaunch(ctx context.Context, p agents.Profile, root string, install bool, out io.Writer) ([]string, error) {
	return agents.Launch(ctx, p, root, install, out)
}

// LoadAgents reads the built-in profiles (each *.toml in builtins), the person's agents.toml in
// kuleHome (missing is fine) and approved extensions' profiles, and checks each. See [agents.Load].
func LoadAgents(builtins fs.FS, kuleHome string) (*agents.Set, error) {
	return loadAgents(builtins, kuleHome)
}

// AgentPackagesRoot is ~/.local/share/kule/packages: where npx agents are installed, once per
// exact version. See [agents.PackagesRoot].
func AgentPackagesRoot() (string, error) { return agents.PackagesRoot() }

// ParseAgentRegistry reads the registry's JSON. See [agents.ParseRegistry].
func ParseAgentRegistry(b []byte) (*agents.Registry, error) { return agents.ParseRegistry(b) }

// PersonalAgentsPath is $KULE_HOME/agents.toml. See [agents.PersonalPath].
func PersonalAgentsPath(kuleHome string) string { return agents.PersonalPath(kuleHome) }

// AgentRegistry is the ACP agent registry:
// {"version":"1.0.0","agents":[{id,name,version,description,distribution}]}. See
// [agents.Registry].
type AgentRegistry = agents.Registry

// AgentSet is every profile Kule knows: built-ins first, then the person's. See [agents.Set].
type AgentSet = agents.Set

// AgentStatus is what the first screen of `kule agents` says of one agent. See [agents.Status].
type AgentStatus = agents.Status

// budget (kernel/internal/budget) caps what agents' runs may cost, as the agents report it: a
// task's runs together (`kule budget TASK 5`) and all tasks together in any 24 hours (`kule
// daily-budget 20`).

// DailyCap is the cap of all tasks in any 24 hours; nil when there is none. See [budget.DailyCap].
func DailyCap(home string) (*budget.Money, error) { return budget.DailyCap(home) }

// BudgetForTask is the summary of the task in taskDir under the Kule home root home: what its runs
// used and where it stands against its caps. See [budget.ForTask].
func BudgetForTask(home string, taskDir string, now time.Time) (*budget.Summary, error) {
	return budget.ForTask(home, taskDir, now)
}

// Money is an amount in one currency (ISO 4217 code, upper case). See [budget.Money].
type Money = budget.Money

// ParseCap reads "5", "5 EUR", "5eur", "2.50 USD"; the currency is USD when none is given. See
// [budget.ParseCap].
func ParseCap(s string) (budget.Money, error) { return budget.ParseCap(s) }

// RecentCharges are every task's charges in the 24 hours before now, oldest first. See
// [budget.RecentCharges].
func RecentCharges(home string, now time.Time) ([]budget.Charge, error) {
	return budget.RecentCharges(home, now)
}

// SetDailyCap sets (nil: removes) the daily cap, atomically. See [budget.SetDailyCap].
func SetDailyCap(home string, c *budget.Money) error { return budget.SetDailyCap(home, c) }

// SetTaskCap sets (nil: removes) the task's cap, atomically. See [budget.SetTaskCap].
func SetTaskCap(taskDir string, c *budget.Money) error { return budget.SetTaskCap(taskDir, c) }

// BudgetSummary is a task's usage and budgets, as kule status and the app show it. See
// [budget.Summary].
type BudgetSummary = budget.Summary

// TaskCap is the cap of the task in taskDir; nil when it has none. See [budget.TaskCap].
func TaskCap(taskDir string) (*budget.Money, error) { return budget.TaskCap(taskDir) }

// UsageFile is what a task's runs used (written by kernel/internal/acp). See [budget.UsageFile].
const UsageFile = budget.UsageFile

// config (kernel/internal/config) reads and writes $KULE_HOME/config.toml, the person's settings.

// Settings is the whole of config.toml. See [config.Config].
type Settings = config.Config

// TransportSettings is one chat cockpit of config.toml. See [config.TransportConfig].
type TransportSettings = config.TransportConfig

// TransportSecretPrefix starts the names of transports' kept secrets, which
// no task's proxy is handed. See [config.TransportSecretPrefix].
const TransportSecretPrefix = config.TransportSecretPrefix

// LoadSettings reads config.toml; a missing file is the defaults. See [config.Load].
func LoadSettings(root string) (*config.Config, error) { return config.Load(root) }

// SaveSettings writes config.toml atomically. See [config.Save].
func SaveSettings(root string, c *config.Config) error { return config.Save(root, c) }

// effects (kernel/internal/effects) finds what a command did to a folder by comparing the task's
// copy with its base, and names each change: add, modify, delete, move, mode, link or type.

// CountEffects adds up effects the way the summary line shows them: a directory added, deleted or
// moved whole counts the files below it. See [effects.Count].
func CountEffects(es []effects.Effect) effects.Counts { return effects.Count(es) }

// KindDelete is [effects.Delete]: a path that the copy no longer has.
const KindDelete = effects.Delete

// Effect is one change a task made, relative to its base. See [effects.Effect].
type Effect = effects.Effect

// EffectKind names what happened to one path. See [effects.Kind].
type EffectKind = effects.Kind

// KindMode is [effects.Mode]: permission bits changed, content the same.
const KindMode = effects.Mode

// QuotePath returns a path as a person can read it on one line: unchanged when it is printable
// UTF-8 without spaces at its ends, otherwise Go-quoted so that a newline or a byte that is not
// UTF-8 shows as an escape, never as a break. See [effects.Quote].
func QuotePath(p string) string { return effects.Quote(p) }

// EffectSummary is the first line a person reads: "3 file changes: +1 ~1 -0 »1". See
// [effects.Summary].
func EffectSummary(es []effects.Effect) string { return effects.Summary(es) }

// KindType is [effects.Type]: file ↔ directory ↔ link.
const KindType = effects.Type

// TypeLink is [effects.TypeLink]: an entry type.
const TypeLink = effects.TypeLink

// group (kernel/internal/group) keeps the person's groups of tasks: a name, a colour and a policy
// of their own (the home's default, balanced, careful, or a Cedar file written for the group,
// validated before it is kept).

// GroupBalance is [group.Balance]: the built-in balanced policy.
const GroupBalance = group.Balance

// GroupCareful is [group.Careful]: the built-in careful policy.
const GroupCareful = group.Careful

// GroupEdit is a change to a group; nil fields stay as they are. See [group.Edit].
type GroupEdit = group.Edit

// ErrGroupNotFound is [group.ErrNotFound]: an error a caller can test for.
var ErrGroupNotFound = group.ErrNotFound

// Group is one group of tasks. See [group.Group].
type Group = group.Group

// OpenGroups returns the groups of a home. See [group.Open].
func OpenGroups(kuleHome string) *group.Store { return group.Open(kuleHome) }

// history (kernel/internal/history) keeps a task's signed, hash-chained history
// (tasks/<id>/history.jsonl): every commit, undo and approval is one JSON line holding the hash of
// the line before it and an ed25519 signature.

// HistoryEntry is one line of the history. See [history.Entry].
type HistoryEntry = history.Entry

// homelayer (kernel/internal/homelayer) gives a task's commands a home of their own, so that an
// agent running `git config --global`, adding a line to ~/.zshrc or writing settings under
// ~/.config never reaches the person's home.

// HomeChange is one thing a task changed in its home. See [homelayer.Change].
type HomeChange = homelayer.Change

// HomeChanges lists what the task changed in its layer. See [homelayer.Changes].
func HomeChanges(l homelayer.Layer) ([]homelayer.Change, error) { return homelayer.Changes(l) }

// HomeDiff returns the person's version and the task's version of a path. See [homelayer.Diff].
func HomeDiff(l homelayer.Layer, rel string) ([]byte, []byte, error) { return homelayer.Diff(l, rel) }

// RunsAtStart reports whether a file in the home is run by shells or tools as they start — a
// change there runs code the next time the person opens a terminal or logs in. See
// [homelayer.RunsAtStart].
func RunsAtStart(rel string) bool { return homelayer.RunsAtStart(rel) }

// limits (kernel/internal/limits) bounds what one run may take: processor (slowed, not stopped,
// by pausing and resuming its processes in turn — no privileges needed), memory (the proportional
// set size of all its processes plus the memfds they hold, or the run's memory cgroup's count
// where that is larger; over it they are killed), processes and threads (pids.max of a cgroup of
// the run's own, else counted and stopped), disk (what its folders grew by, measured every second,
// and no single file past it through RLIMIT_FSIZE), wall time (one run's, and all of a task's
// runs' together, kept with the task), and idle time.

// FormatBytes prints a size as a person reads it. See [limits.Bytes].
func FormatBytes(n int64) string { return limits.Bytes(n) }

// DefaultPids is the number of processes and threads a run may hold at once when neither the task
// nor the home sets one. See [limits.DefaultPids].
const DefaultPids = limits.DefaultPids

// ErrBadGPU is [limits.ErrBadGPU]: a GPU setting other than on or off.
var ErrBadGPU = limits.ErrBadGPU

// GPUOff is [limits.GPUOff]: a GPU setting.
const GPUOff = limits.GPUOff

// GPUOn is [limits.GPUOn]: a GPU setting.
const GPUOn = limits.GPUOn

// Limits for one run; a zero field is no limit. See [limits.Limits].
type Limits = limits.Limits

// LoadTaskTime reads what the task's runs have used; a missing file is none. See
// [limits.LoadTaskTime].
func LoadTaskTime(file string) (time.Duration, error) { return limits.LoadTaskTime(file) }

// ParseBytes reads "4G", "512M", "10GiB", "2048" (bytes). See [limits.ParseBytes].
func ParseBytes(s string) (int64, error) { return limits.ParseBytes(s) }

// TaskTimeFile is where the task in taskDir keeps its runs' time. See [limits.TaskTimeFile].
func TaskTimeFile(taskDir string) string { return limits.TaskTimeFile(taskDir) }

// memory (kernel/internal/memory) keeps the memory of past runs in $KULE_HOME/memory.db: run
// records, failures and the fixes that followed, notes, recall before a run, and forgetting.

// MemoryStore is an open memory database. See [memory.Store].
type MemoryStore = memory.Store

// MemoryRecord is one run's record. See [memory.Run].
type MemoryRecord = memory.Run

// MemoryFailure is a run that went wrong, with the fixes that followed. See [memory.Failure].
type MemoryFailure = memory.Failure

// MemoryFilter narrows a list of runs. See [memory.Filter].
type MemoryFilter = memory.Filter

// MemoryRecall is what memory offers before a run. See [memory.Recall].
type MemoryRecall = memory.Recall

// MemoryQuestion is a question a run asked and its answer. See [memory.Question].
type MemoryQuestion = memory.Question

// MemoryNote is one item of recall's notes for an agent. See [memory.Note].
type MemoryNote = memory.Note

// MemoryNotesHeader is [memory.NotesHeader]: the line that opens the notes an agent is given.
const MemoryNotesHeader = memory.NotesHeader

// MemoryForgotten says what a forget erased. See [memory.Forgotten].
type MemoryForgotten = memory.Forgotten

// MemorySourceChat is [memory.SourceChat]: a prompt from a chat user who is not the operator.
const MemorySourceChat = memory.SourceChat

// MemoryUntrusted is [memory.Untrusted]: the trust tier of text Kule did not observe itself.
const MemoryUntrusted = memory.Untrusted

// MemoryProgress is where a running turn was. See [memory.Progress].
type MemoryProgress = memory.Progress

// MemoryStepMark is one step of a running turn's progress. See [memory.StepMark].
type MemoryStepMark = memory.StepMark

// MemoryResumeNote is [memory.ResumeNote]: what a run that resumes an interrupted one is told.
func MemoryResumeNote(r *MemoryRecord) string { return memory.ResumeNote(r) }

// MemoryOutcomePartly is [memory.OutcomePartly]: a commit applied some of a run's paths and held the others back.
const MemoryOutcomePartly = memory.OutcomePartly

// MemoryPath is $KULE_HOME/memory.db. See [memory.Path].
func MemoryPath(home string) string { return memory.Path(home) }

// ErrMemoryDamaged is [memory.ErrDamaged]: the memory database is not a database, or corrupt.
var ErrMemoryDamaged = memory.ErrDamaged

// ErrMemoryLocked is [memory.ErrLocked]: another process held the memory's lock too long.
var ErrMemoryLocked = memory.ErrLocked

// ErrMemoryNotFound is [memory.ErrNotFound]: no memory item has that id.
var ErrMemoryNotFound = memory.ErrNotFound

// pluginhost (kernel/internal/pluginhost) runs Kule's plugins: it installs them into
// $KULE_HOME/plugins, keeps the person's approvals (name + exact version + sha256 of the
// executable and of the manifest), and starts approved plugins out of process with
// hashicorp/go-plugin over gRPC.

// BuiltinPlugin is a plugin compiled into the kule binary. See [pluginhost.Builtin].
type BuiltinPlugin = pluginhost.Builtin

// ConfineArg is the argument after `__plugin` that runs ConfineMain. See [pluginhost.ConfineArg].
const ConfineArg = pluginhost.ConfineArg

// ConfineMain is the last step before a plugin runs, already inside the sandbox (kernel/internal/sandbox):
// `kule-plugins __plugin __confine <profile>` adds a second Landlock domain for the plugin's kind on top
// of the sandbox's own, then executes the plugin. See [pluginhost.ConfineMain].
func ConfineMain(arg string) int { return pluginhost.ConfineMain(arg) }

// PluginHost installs, approves and runs plugins for one kule process. See [pluginhost.Host].
type PluginHost = pluginhost.Host

// NewPluginHost returns a host on the Kule home root (KULE_HOME). See [pluginhost.New].
func NewPluginHost(home string, opts pluginhost.Options) *pluginhost.Host {
	return pluginhost.New(home, opts)
}

// PluginHostOptions configure a Host. See [pluginhost.Options].
type PluginHostOptions = pluginhost.Options

// PluginLaunchSpec is what a PluginHostOptions.CmdFactory is asked to start. See
// [pluginhost.LaunchSpec].
type PluginLaunchSpec = pluginhost.LaunchSpec

// PluginProfiles are the sandbox profiles by kind. See [pluginhost.Profiles].
var PluginProfiles = pluginhost.Profiles

// PluginStatus is what Kule knows of an installed plugin without running it. See
// [pluginhost.Status].
type PluginStatus = pluginhost.Status

// extensions (kernel/internal/extensions) is the kernel's side of JavaScript extensions: the
// store of .kulext packages in $KULE_HOME/extensions, their approvals in kule.lock (id, exact
// version, sha256 of the package), the permission check on every call, and the host's launch.

// ExtensionStore is the installed extensions under one Kule home. See [extensions.Store].
type ExtensionStore = extensions.Store

// NewExtensionStore returns the store of home. See [extensions.New].
//
// Its agent profiles' approvals are the agent profiles' own (kule agents approve).
func NewExtensionStore(home string) *ExtensionStore {
	s := extensions.New(home)
	s.AgentApproved = func(name string, content []byte) bool {
		ps, err := agents.Parse(content, name)
		if err != nil || len(ps) != 1 || ps[0].Name != name {
			return false
		}
		ok, err := agents.Approved(home, ps[0])
		return err == nil && ok
	}
	return s
}

// ExtensionStatus is what Kule knows of an installed extension. See [extensions.Status].
type ExtensionStatus = extensions.Status

// ExtensionRunner starts approved extensions, each in a host of its own. See [extensions.Runner].
type ExtensionRunner = extensions.Runner

// ExtensionPool keeps extension hosts running for a long-lived process (the daemon): one
// loaded host per approved extension and one spare started ahead. See [extensions.Pool].
type ExtensionPool = extensions.Pool

// ExtensionLimits bound one extension's runtime. See [extensions.Limits].
type ExtensionLimits = extensions.Limits

// RunningExtension is one loaded extension. See [extensions.Running].
type RunningExtension = extensions.Running

// ExtensionNote is a note an extension adds to a review. See [extensions.Note].
type ExtensionNote = extensions.Note

// ExtensionMethods are the calls extensions can make, with the permission each needs. See
// [extensions.Methods].
var ExtensionMethods = extensions.Methods

// ExtensionHostLauncher starts `kule-plugins __plugin extension/host` in the plugin sandbox through h.
// See [extensions.HostLauncher].
func ExtensionHostLauncher(h *PluginHost) extensions.Launcher { return extensions.HostLauncher(h) }

// ErrExtensionNotApproved is [extensions.ErrNotApproved].
var ErrExtensionNotApproved = extensions.ErrNotApproved

// ExtensionAllowed checks one call of an extension against its approved permissions. See
// [extensions.Allowed].
var ExtensionAllowed = extensions.Allowed

// ErrExtensionDenied is [extensions.ErrDenied].
var ErrExtensionDenied = extensions.ErrDenied

// policy (kernel/internal/policy) judges every change a task made and every connection it asked
// for with a Cedar policy (github.com/cedar-policy/cedar-go), and turns Cedar's allow/deny into
// Kule's three verdicts: a request passes on its own, waits for approval, or is denied.

// AllowHost remembers that connections from tasks on folder to host:port pass (the rule they lift
// is unknown-hosts). See [policy.AllowHost].
func AllowHost(kuleHome string, folder string, hostPort string) (policy.Remembered, error) {
	return policy.AllowHost(kuleHome, folder, hostPort)
}

// Ask is [policy.Ask]: one of the three outcomes (pass, ask, deny).
const Ask = policy.Ask

// PolicyBalanced is [policy.Balanced]: the name of a built-in policy.
const PolicyBalanced = policy.Balanced

// BuiltinPolicyText returns the Cedar text of a built-in policy, as it would be read: the rules
// both hold, then the choice's own. See [policy.BuiltinText].
func BuiltinPolicyText(choice string) (string, error) { return policy.BuiltinText(choice) }

// PolicyCareful is [policy.Careful]: the name of a built-in policy.
const PolicyCareful = policy.Careful

// PolicyChoices are the built-in policies a person can choose between. See [policy.Choices].
var PolicyChoices = policy.Choices

// Deny is [policy.Deny]: one of the three outcomes (pass, ask, deny).
const Deny = policy.Deny

// Forget takes back remembered approval number n (as `kule rules` numbers them) and returns it.
// See [policy.Forget].
func Forget(kuleHome string, n int) (policy.Remembered, error) { return policy.Forget(kuleHome, n) }

// ForgetIf is Forget of rule n only while is says it is the rule the
// caller showed, judged under the rules' lock. See [policy.ForgetIf].
func ForgetIf(kuleHome string, n int, is func(policy.Remembered) bool) (policy.Remembered, error) {
	return policy.ForgetIf(kuleHome, n, is)
}

// ErrRuleMoved is [policy.ErrRuleMoved]: the number names another rule now.
var ErrRuleMoved = policy.ErrRuleMoved

// LayerBuiltin is [policy.LayerBuiltin]: one of the policy's layers.
const LayerBuiltin = policy.LayerBuiltin

// LayerRemembered is [policy.LayerRemembered]: one of the policy's layers.
const LayerRemembered = policy.LayerRemembered

// Outcome is one of Kule's three verdicts. See [policy.Outcome].
type Outcome = policy.Outcome

// PersonPolicyPath is $KULE_HOME/policy.cedar. See [policy.PersonPath].
func PersonPolicyPath(kuleHome string) string { return policy.PersonPath(kuleHome) }

// ReadRemembered reads rules.cedar, in file order. See [policy.ReadRemembered].
func ReadRemembered(kuleHome string) ([]policy.Remembered, error) {
	return policy.ReadRemembered(kuleHome)
}

// Ruling is the policy's answer to a batch of requests: one verdict per request, in the order of
// the requests. See [policy.Ruling].
type Ruling = policy.Ruling

// PolicySchema returns Kule's Cedar schema, for people who write their own policy. See
// [policy.Schema].
func PolicySchema() string { return policy.Schema() }

// Verdict is the policy's answer to one request. See [policy.Verdict].
type Verdict = policy.Verdict

// WouldLet reads past tasks' network.jsonl under $KULE_HOME/tasks and returns, per task on folder
// (every task when folder is ""), the connections to host:port that did not pass: what an
// allowance would have let through. See [policy.WouldLet].
func WouldLet(kuleHome string, folder string, hostPort string) ([]policy.Past, error) {
	return policy.WouldLet(kuleHome, folder, hostPort)
}

// relpath (kernel/internal/relpath) holds the relative paths Kule stores in journals, checkpoints
// and JSON output.

// RelPath is a slash-separated path relative to a folder root. See [relpath.Path].
type RelPath = relpath.Path

// reveal (kernel/internal/reveal) finds the projects beside a folder that its builds read:
// `replace ../x` in go.mod, `path = "../x"` in Cargo.toml, `file:../x` in package.json and
// ProjectReference in .csproj files.

// SuggestReveal walks folder (to a small depth) for manifests and returns the paths outside folder
// they refer to, sorted and without repeats. See [reveal.Suggest].
func SuggestReveal(folder string) ([]reveal.Suggestion, []error) { return reveal.Suggest(folder) }

// review (kernel/internal/review) says what changed inside each changed file by the names a
// person uses — functions, methods, sections, keys — by asking the differ that reads the file
// (through the plugin host) for the entities of its old and new bytes.

// ReviewFile is the review of one changed file. See [review.File].
type ReviewFile = review.File

// runner (kernel/internal/runner) is the seam between `kule exec` and whatever isolates the
// command: the direct runner here starts it plainly in the task's copy; the sandbox
// (kernel/internal/sandbox) implements the same interface with namespaces and Landlock, so exec never
// changes when isolation does.

// Runner starts a command and waits for it. See [runner.Runner].
type Runner = runner.Runner

// Spec is one command to run. See [runner.Spec].
type Spec = runner.Spec

// sandbox (kernel/internal/sandbox) runs a task's commands isolated from the person's machine.

// ErrCommandCannotRun is [sandbox.ErrCommandCannotRun]: the file is not a program the system can
// start (exit code 126).
var ErrCommandCannotRun = sandbox.ErrCommandCannotRun

// ErrCommandNotFound is [sandbox.ErrCommandNotFound]: no such program (exit code 127, as a shell
// says).
var ErrCommandNotFound = sandbox.ErrCommandNotFound

// SandboxHelperMain answers a binary started with a helper's arguments (cmd/kule and
// cmd/kule-sandbox call it, through ServeHelper). See [sandbox.HelperMain].
func SandboxHelperMain() int { return sandbox.HelperMain() }

// ProbeSandbox finds what the sandbox can use here. See [sandbox.Probe].
func ProbeSandbox() sandbox.Availability { return sandbox.Probe() }

// Sandbox runs commands isolated (see the package doc). See [sandbox.Sandbox].
type Sandbox = sandbox.Sandbox

// ServeSandboxHelper answers `kule __sandbox …` and exits, when args (a program's arguments,
// without its name) ask for it: cmd/kule calls it first. See [sandbox.ServeHelper].
func ServeSandboxHelper(args []string) { sandbox.ServeHelper(args) }

// sandboxlog (kernel/internal/sandboxlog) keeps a task's sandbox.jsonl: one JSON line for each
// thing Kule's sandbox refused or weakened for one of the task's runs — a command that did not run
// because isolation could not be set up, an opening (--reveal, --allow-write, an agent profile's)
// that would have reached a hidden path, a device that is never given, and weaker isolation
// accepted for a run.

// RefusalLine is r as one line for a terminal: sandbox: 08:31 refused --reveal /root/.ssh (kule
// exec cat) · it would open … · run it again without … See [sandboxlog.Line].
func RefusalLine(r sandboxlog.Record) string { return sandboxlog.Line(r) }

// SandboxLogPath is the log of the task whose directory is taskDir. See [sandboxlog.Path].
func SandboxLogPath(taskDir string) string { return sandboxlog.Path(taskDir) }

// SandboxRecord is one line of sandbox.jsonl. See [sandboxlog.Record].
type SandboxRecord = sandboxlog.Record

// secrets (kernel/internal/secrets) keeps the person's secrets (API keys and the like) under
// $KULE_HOME/secrets, each sealed with AES-256-GCM.

// CheckSecretHost normalises a host name and refuses anything but a plain DNS name (no scheme,
// port, path or wildcard). See [secrets.CheckHost].
func CheckSecretHost(h string) (string, error) { return secrets.CheckHost(h) }

// ErrNoSecretHost is [secrets.ErrNoHost]: an error a caller can test for.
var ErrNoSecretHost = secrets.ErrNoHost

// OpenSecrets opens the store of home with its sealer (see OpenSealer). See [secrets.Open].
func OpenSecrets(home string) (*secrets.Store, error) { return secrets.Open(home) }

// SecretStore is $KULE_HOME/secrets. See [secrets.Store].
type SecretStore = secrets.Store

// task (kernel/internal/task) keeps Kule's tasks under $KULE_HOME/tasks: their ids, their
// task.json, the layout of each task's directory, and the locks that serialise two kule processes
// working on one task or one folder.

// DefaultHome is $KULE_HOME, or ~/.kule when it is not set. See [task.DefaultRoot].
func DefaultHome() (string, error) { return task.DefaultRoot() }

// ErrAmbiguous is [task.ErrAmbiguous]: an error a caller can test for.
var ErrAmbiguous = task.ErrAmbiguous

// ErrBadID is [task.ErrBadID]: an error a caller can test for.
var ErrBadID = task.ErrBadID

// LockFile takes the exclusive lock on path, waiting for another kule process that holds it. See
// [task.LockFile].
func LockFile(path string) (*task.Lock, error) { return task.LockFile(path) }

// OpenTasks returns the store at root, creating its directories (0700). See [task.Open].
func OpenTasks(root string) (*task.Store, error) { return task.Open(root) }

// Task is what task.json holds. See [task.Task].
type Task = task.Task

// termsafe (kernel/internal/termsafe) makes text that came from a task safe to print on a
// terminal: a file name, an entity name, a step title or an agent's message could hold escape
// sequences (a clipboard write, cursor moves that hide the lines above, a changed window title)
// that a terminal would obey.

// SafeLine returns s for one line of output: every control character, line breaks and tabs
// included, shows as an escape. See [termsafe.Line].
func SafeLine(s string) string { return termsafe.Line(s) }

// SafeText returns s for output that may span lines: line breaks and tabs stay, every other
// control character shows as an escape. See [termsafe.Text].
func SafeText(s string) string { return termsafe.Text(s) }

// walk (kernel/internal/walk) lists a directory tree with its metadata, in parallel, without ever
// following a symbolic link or reading a file's content.

// Problem is an entry the walk passed over, and why. See [walk.Problem].
type Problem = walk.Problem
