// Package policy judges every change a task made and every connection it
// asked for with a Cedar policy (github.com/cedar-policy/cedar-go), and turns
// Cedar's allow/deny into Kule's three verdicts: a request passes on its own,
// waits for approval, or is denied.
//
// A request is one Cedar request: principal Kule::Task::"<id>", action
// Kule::Action::"file.modify" (or another of the Actions below), resource
// Kule::Path::"<path>" or Kule::Host::"<host>:<port>". The entity builder
// classifies a path by its name (manifest, lockfile, ci, …) and a host by the
// embedded host list (package_registry, model_api) so that rules read tags,
// not file names.
//
// The three verdicts come from annotations: every forbid carries
// @id("…") and @verdict("ask"|"deny"). A request is denied if any forbid that
// matches it says deny; it waits if every matching forbid says ask; it passes
// if no forbid matches and a permit does; a request nothing permits waits with
// the rule "no-rule-lets-it-pass".
//
// Layers, read by Load:
//
//  1. the built-in policy (balanced or careful), or $KULE_HOME/policy.cedar,
//     which replaces it (Kule never writes that file);
//  2. the folder's own .kule/policy.cedar, read from the real folder, which
//     may only add forbid rules;
//  3. $KULE_HOME/rules.cedar: remembered approvals, narrow permits per folder,
//     rule and path or host. A remembered permit lets through what one
//     rememberable ask rule of layer 1 stopped; it never lifts a deny, a rule
//     marked @remember("never") or a forbid of the folder's own policy.
package policy

import (
	"errors"
	"fmt"
	"strings"
)

// Errors a caller can test for.
var (
	// ErrPolicy is wrapped by every error about a policy file that does not
	// parse or validate; the message names the file and line.
	ErrPolicy = errors.New("the policy cannot be used")
	// ErrFolderPermit is wrapped when a folder's .kule/policy.cedar holds a
	// permit: a folder may only add forbid rules.
	ErrFolderPermit = errors.New("a folder's policy may only add forbid rules")
	// ErrUnknownChoice is returned for a built-in policy name other than
	// balanced or careful.
	ErrUnknownChoice = errors.New("no such built-in policy")
	// ErrNoSuchRule is returned by Forget for a number not in the list.
	ErrNoSuchRule = errors.New("no such remembered rule")
	// ErrRuleMoved is returned by ForgetIf when number n is no longer the
	// rule the caller showed.
	ErrRuleMoved = errors.New("that number is now another remembered rule")
	// ErrBadHost is returned for a HOST:PORT that does not parse.
	ErrBadHost = errors.New("not a HOST:PORT")
)

// Action is what a request does, as Kule::Action::"<action>".
type Action string

// The actions of ARCHITECTURE.md §6.
const (
	FileCreate Action = "file.create"
	FileModify Action = "file.modify"
	FileDelete Action = "file.delete"
	FileMove   Action = "file.move"
	FileMode   Action = "file.mode"
	FileLink   Action = "file.link"
	GitRef     Action = "git.ref"
	GitIndex   Action = "git.index"
	GitHook    Action = "git.hook"
	GitConfig  Action = "git.config"
	GitRewrite Action = "git.rewrite"
	NetConnect Action = "net.connect"
	HomeWrite  Action = "home.write"
)

// Actions lists every action in a stable order.
var Actions = []Action{
	FileCreate, FileModify, FileDelete, FileMove, FileMode, FileLink,
	GitRef, GitIndex, GitHook, GitConfig, GitRewrite, NetConnect, HomeWrite,
}

// Valid reports whether a is one of Actions.
func (a Action) Valid() bool {
	for _, x := range Actions {
		if a == x {
			return true
		}
	}
	return false
}

// Request is one thing a task did that the policy judges: a change to a path
// (file.*, git.*, home.write) or a connection (net.connect).
type Request struct {
	Action Action `json:"action"`
	// Path is the path relative to the folder, slash-separated (for git.ref
	// and git.rewrite: the ref, e.g. refs/heads/main; for home.write: the
	// path relative to the home directory).
	Path string `json:"path,omitempty"`
	From string `json:"from,omitempty"` // a move's old path
	Host string `json:"host,omitempty"` // net.connect
	Port int    `json:"port,omitempty"` // net.connect
	// Reason says why the request was made, in a person's words (git
	// requests: "history rewritten: main moved off 3 commits").
	Reason string `json:"reason,omitempty"`
	// Count is how many files the request stands for: a whole directory
	// deleted counts the files below it. Zero counts as one.
	Count int `json:"count,omitempty"`
	// Link is true when the request makes or changes a symbolic link.
	Link bool `json:"link,omitempty"`
	// NestedRepo is true when the path is (or is inside) a repository other
	// than the folder's own, found by looking rather than by name.
	NestedRepo bool `json:"nested_repo,omitempty"`
	// Effect is the index of the effect the request came from in the slice
	// given to FromEffects, or -1.
	Effect int `json:"effect"`
	// GitChange says what a git request does beyond its action, as the
	// context's git_change reads it: GitDelete, GitDetach, GitOrphan,
	// GitStagedDiffers, GitBrings (a file change a ref's new commits bring),
	// or "" for none.
	GitChange string `json:"git_change,omitempty"`
	// Truncates is true for a file.modify that leaves the file with less
	// than a tenth of its size (empty included): it counts as a deletion
	// for mass-delete rules, as context.truncates says.
	Truncates bool `json:"truncates,omitempty"`

	// inner holds the tags of the paths below a directory changed whole.
	inner tagMask
}

// What a git request does beyond its action (Request.GitChange).
const (
	GitDelete        = "delete"         // git.ref: a ref is deleted
	GitDetach        = "detach"         // git.ref on HEAD: HEAD names a commit, not a branch
	GitOrphan        = "orphan"         // git.ref on HEAD: HEAD names a branch that does not exist
	GitSwitch        = "switch"         // git.ref on HEAD: HEAD names another branch
	GitStagedDiffers = "staged_differs" // git.index: staged content differs from its file
	GitBrings        = "brings"         // file.*: a change a ref's new commits bring
)

// BringsRequest makes the request for one path that a ref's new commits
// change (kind "add", "modify" or "delete"), judged as that file change
// is; path is relative to the folder. It never counts as a deletion of the
// folder's files: those are judged as file effects.
func BringsRequest(path, kind, reason string) Request {
	a := FileModify
	switch kind {
	case "add":
		a = FileCreate
	case "delete":
		a = FileDelete
	}
	return Request{Action: a, Path: path, Reason: reason, Effect: -1, GitChange: GitBrings}
}

// GitRequest makes a request for a change to git that the git judge found:
// action is one of git.ref, git.index, git.hook, git.config, git.rewrite;
// pathOrRef is the ref (refs/heads/main) or the path (.git/hooks/pre-commit,
// sub/.git/config); reason says in a person's words what happened.
func GitRequest(action Action, pathOrRef, reason string) Request {
	return Request{Action: action, Path: pathOrRef, Reason: reason, Effect: -1}
}

// HomeRequest makes a request for a change to a file in the person's home
// directory; path is relative to the home.
func HomeRequest(path string) Request {
	return Request{Action: HomeWrite, Path: path, Effect: -1}
}

// NetRequest makes a request for a connection to host:port.
func NetRequest(host string, port int) Request {
	return Request{Action: NetConnect, Host: host, Port: port, Effect: -1}
}

// Subject is what the request is about as a person reads it: the path, a
// move as "a → b", or host:port.
func (r Request) Subject() string {
	if r.Action == NetConnect {
		return quote(hostKey(r.Host, r.Port))
	}
	p := quote(r.Path)
	if r.Action == FileMove && r.From != "" {
		return quote(r.From) + " → " + p
	}
	return p
}

// Outcome is one of Kule's three verdicts.
type Outcome int

// The three outcomes, in order of severity.
const (
	Pass Outcome = iota
	Ask
	Deny
)

func (o Outcome) String() string {
	switch o {
	case Pass:
		return "passes"
	case Ask:
		return "waits for approval"
	}
	return "denied"
}

// MarshalText makes an Outcome read as a word in JSON.
func (o Outcome) MarshalText() ([]byte, error) {
	switch o {
	case Pass:
		return []byte("pass"), nil
	case Ask:
		return []byte("ask"), nil
	}
	return []byte("deny"), nil
}

// NoRule is the rule named when nothing permits a request.
const NoRule = "no-rule-lets-it-pass"

// RememberedReason is the reason of a verdict that passed by a remembered
// approval (kule rules): one path or one host:port the person approved.
const RememberedReason = "approved before and remembered (kule rules)"

// Verdict is the policy's answer to one request.
type Verdict struct {
	Request Request `json:"request"`
	Outcome Outcome `json:"outcome"`
	// Rules are the ids of the rules that decided: the forbids that matched
	// (for Ask and Deny), the permits (for Pass), or NoRule.
	Rules  []string `json:"rules,omitempty"`
	Reason string   `json:"reason,omitempty"`
	// Rememberable is true when --remember may keep an approval of this
	// request as a narrow exception (only for Ask).
	Rememberable bool `json:"rememberable,omitempty"`
}

// String renders the verdict as a person reads it:
// "Cargo.toml · waits for approval (manifests-and-lockfiles)".
func (v Verdict) String() string {
	s := v.Request.Subject() + " · " + v.Outcome.String()
	if len(v.Rules) > 0 {
		s += " (" + strings.Join(v.Rules, ", ") + ")"
	}
	return s
}

// Ruling is the policy's answer to a batch of requests: one verdict per
// request, in the order of the requests.
type Ruling struct {
	Verdicts []Verdict `json:"verdicts"`
}

// Worst is the most severe outcome in the ruling (Pass for none).
func (r Ruling) Worst() Outcome {
	w := Pass
	for _, v := range r.Verdicts {
		w = max(w, v.Outcome)
	}
	return w
}

// Of returns the verdicts with the given outcome.
func (r Ruling) Of(o Outcome) []Verdict {
	var out []Verdict
	for _, v := range r.Verdicts {
		if v.Outcome == o {
			out = append(out, v)
		}
	}
	return out
}

// summaryLimit is how many lines of one kind Summary prints before it
// counts the rest.
const summaryLimit = 40

// Summary is the ruling as `kule status` prints it: "policy: passes on its
// own", or "policy: waits for approval" with a line per path and rule, and
// "policy: denied, never applied" with a line per denied path.
func (r Ruling) Summary() []string {
	asks, denies := r.Of(Ask), r.Of(Deny)
	if len(asks) == 0 && len(denies) == 0 {
		return []string{"policy: passes on its own"}
	}
	var lines []string
	add := func(head string, vs []Verdict) {
		if len(vs) == 0 {
			return
		}
		lines = append(lines, head)
		for i, v := range vs {
			if i == summaryLimit {
				lines = append(lines, fmt.Sprintf("  … and %d more", len(vs)-summaryLimit))
				break
			}
			line := "  " + v.String()
			if v.Reason != "" {
				line += ": " + v.Reason
			}
			lines = append(lines, line)
		}
	}
	add("policy: waits for approval", asks)
	add("policy: denied, never applied", denies)
	return lines
}

func hostKey(host string, port int) string {
	return fmt.Sprintf("%s:%d", host, port)
}

// HostKey is host:port as rules and requests name a host: the host
// cleaned (lower case, no brackets, no trailing dot) and the port.
func HostKey(host string, port int) string { return hostKey(cleanHost(host), port) }
