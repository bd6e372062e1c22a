// Package graduation proposes, from what Kule itself observed, that a
// question the policy keeps asking be asked no more: a category (one
// asking rule on one folder, or on one host or one file for the rules
// that would otherwise let anything through) graduates once the person
// approved changes in it, in runs that ended well and whose commits were
// kept, often enough, in enough different tasks and over long enough.
//
// Evidence is only what the agent cannot forge: that a person approved the
// change (the commit's approval), the run's exit as Kule saw it, that the
// commit stayed (not undone, not rolled back) for a while, and that no
// later run on the folder failed on the same paths. What an agent wrote
// (a "tests passed" file, its own report) is never read.
//
// Nothing graduates on its own: Review makes proposals, a person accepts
// one (Keeper.Accept), which keeps a permit in rules.cedar with
// @graduated(ID) and signs an entry in $KULE_HOME/graduation.jsonl. One
// failure in a graduated category withdraws its permit, resets its count
// and says so. A run whose input was not all trusted gets no graduated
// permit (policy.Engine.WithoutGraduated).
package graduation

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kulehq/kule/kernel/internal/atomicfile"
	"github.com/kulehq/kule/kernel/internal/history"
	"github.com/kulehq/kule/kernel/internal/memory"
	"github.com/kulehq/kule/kernel/internal/policy"
	"github.com/kulehq/kule/kernel/internal/task"
)

// Errors a caller can test for.
var (
	ErrNoProposal = errors.New("graduation: no such proposal")
	ErrDamaged    = errors.New("graduation: the state file is damaged")
)

// Settings are the thresholds a category must meet, as config.toml's
// [graduation] section sets them.
type Settings struct {
	MinSuccesses     int           // successes since the last reset
	MinDistinctTasks int           // in this many different tasks: one repeated job cannot farm trust
	Cooldown         time.Duration // from the first counted success to the proposal
	Kept             time.Duration // a commit counts once it was kept this long
}

// Defaults are the thresholds when config.toml sets none.
func Defaults() Settings {
	return Settings{MinSuccesses: 5, MinDistinctTasks: 3, Cooldown: 7 * 24 * time.Hour, Kept: 24 * time.Hour}
}

// Category is what trust is earned for: one rule on one folder, or on one
// path, home file or host:port of it (Subject). The rules that would let
// anything through if lifted for a whole folder (policy.NeedsSubject:
// unknown-hosts, home-writes, ...) are categories only with a subject, so
// evidence for one host or file counts nothing toward another.
type Category struct {
	Folder  string `json:"folder"`
	Rule    string `json:"rule"`
	Subject string `json:"subject,omitempty"`
	Host    bool   `json:"host,omitempty"` // Subject is host:port
	Home    bool   `json:"home,omitempty"` // Subject is a file of the person's home, relative to it
}

func (c Category) key() string {
	k := fmt.Sprintf("%s\x00%s\x00%s\x00%v", c.Folder, c.Rule, c.Subject, c.Host)
	if c.Home {
		k += "\x00home"
	}
	return k
}

// String names the category for a person.
func (c Category) String() string {
	switch {
	case c.Host:
		return fmt.Sprintf("%s for the host %s in %s", c.Rule, c.Subject, c.Folder)
	case c.Home:
		return fmt.Sprintf("%s for ~/%s in %s", c.Rule, c.Subject, c.Folder)
	case c.Subject != "":
		return fmt.Sprintf("%s for %s in %s", c.Rule, c.Subject, c.Folder)
	}
	return fmt.Sprintf("%s in %s", c.Rule, c.Folder)
}

// Use is what one run did in a category.
type Use struct {
	Rule, Subject string
	Host, Home    bool // as Category's
	Approved      bool // a person approved a change this rule asked about
	Lifted        bool // a remembered or graduated rule let a change through
	// Undone: the person took this subject's change back (a home file's
	// apply undone) at UndoneAt; a failure of this category alone.
	Undone   bool
	UndoneAt time.Time
	// At is when the subject's counts last changed: for a home file the
	// person applied, when they applied it. That apply, not a commit of
	// the folder, is what a home file's change needs kept to count.
	At time.Time
}

// kept says whether what u approved in r was kept for long enough at now:
// the run's commit, or for a home file the person's apply of it (a run
// that changed only files of the home commits nothing to the folder, and
// the apply is the person's own act on that file).
func kept(r Run, u Use, now time.Time, s Settings) bool {
	if r.Outcome == memory.OutcomeCommitted && now.Sub(r.OutcomeAt) >= s.Kept {
		return true
	}
	return u.Home && u.Approved && !u.Undone && r.Outcome == "" && !u.At.IsZero() && now.Sub(u.At) >= s.Kept
}

// keptSince is when what kept judged was kept from.
func keptSince(r Run, u Use) time.Time {
	if r.Outcome == memory.OutcomeCommitted {
		return r.OutcomeAt
	}
	return u.At
}

// Run is what Kule observed of one run (from its memory).
type Run struct {
	ID        int64
	Task      string
	Folder    string
	Trusted   bool // the prompt and every input were the operator's or Kule's own
	Ended     time.Time
	Succeeded bool // Kule saw it end well: exit 0, or a turn that finished
	Failed    bool // Kule saw it fail: a non-zero exit, a failed turn, a limit
	Uses      []Use
	Outcome   string // memory.Outcome*: committed, rolled_back, undone; "" pending
	OutcomeAt time.Time
	Paths     []string
}

// FromMemory turns memory's run records into Runs.
func FromMemory(rs []*memory.Run) []Run {
	out := make([]Run, 0, len(rs))
	for _, r := range rs {
		if r.Ended.IsZero() {
			continue
		}
		run := Run{ID: r.ID, Task: r.Task, Folder: r.Folder, Trusted: r.Trust == memory.Trusted, Ended: r.Ended,
			Succeeded: r.Succeeded(), Failed: r.How == memory.EndFailed || r.How == memory.EndLimit,
			Outcome: r.Outcome, OutcomeAt: r.OutcomeAt, Paths: r.Paths}
		rules := make([]string, 0, len(r.Rules))
		for id := range r.Rules {
			rules = append(rules, id)
		}
		sort.Strings(rules)
		for _, id := range rules {
			u := r.Rules[id]
			if u.Approved > 0 || u.Remembered > 0 {
				run.Uses = append(run.Uses, Use{Rule: id, Approved: u.Approved > 0 && r.ApprovedBy != "", Lifted: u.Remembered > 0})
			}
		}
		// The per-subject rules' uses, one category per host or home
		// file. Their approval is the person's own act on that subject (an
		// answer to the connection's question, a home file they applied),
		// not the commit's.
		for _, su := range r.Subjects {
			if su.Approved == 0 && su.Remembered == 0 && su.Undone == 0 {
				continue
			}
			run.Uses = append(run.Uses, Use{Rule: su.Rule, Subject: su.Subject, Host: su.Kind == memory.SubjectHost,
				Home: su.Kind == memory.SubjectHome, Approved: su.Approved > 0, Lifted: su.Remembered > 0, Undone: su.Undone > 0, UndoneAt: su.At, At: su.At})
		}
		out = append(out, run)
	}
	return out
}

// Evidence is one run counted toward a proposal.
type Evidence struct {
	Run   int64     `json:"run"`
	Task  string    `json:"task"`
	Ended time.Time `json:"ended"`
	Kept  time.Time `json:"kept_since"` // when its commit was made
}

// Proposal is a category that met every threshold, with its evidence.
type Proposal struct {
	ID        string     `json:"id"`
	Category  Category   `json:"category"`
	Successes int        `json:"successes"`
	Tasks     int        `json:"tasks"`
	Since     time.Time  `json:"since"` // the first counted success
	Evidence  []Evidence `json:"evidence"`
}

// Line is the proposal in one line for a person.
func (p Proposal) Line() string {
	return fmt.Sprintf("%s · %s: approved and kept %d times in %d tasks since %s", p.ID, p.Category, p.Successes, p.Tasks, p.Since.Format("2006-01-02"))
}

// Scope says what accepting the proposal lets through, and what it does
// not: exactly one host:port, one home file or one path for a category
// with a subject, every change the rule asks about on the folder without.
func (p Proposal) Scope() string {
	c := p.Category
	switch {
	case c.Host:
		return fmt.Sprintf("it lifts %s for connections to %s from tasks on %s only: any other host or port still asks", c.Rule, c.Subject, c.Folder)
	case c.Home:
		return fmt.Sprintf("it lifts %s for ~/%s from tasks on %s only: any other file of your home still asks", c.Rule, c.Subject, c.Folder)
	case c.Subject != "":
		return fmt.Sprintf("it lifts %s for %s in %s only: any other path still asks", c.Rule, c.Subject, c.Folder)
	}
	return fmt.Sprintf("it lifts %s for every change it asks about in %s", c.Rule, c.Folder)
}

// Demotion is a failure in a category: its count was reset and, when it
// had graduated, its permit withdrawn.
type Demotion struct {
	Category  Category  `json:"category"`
	Run       int64     `json:"run"`
	Why       string    `json:"why"`
	At        time.Time `json:"at"`
	Withdrawn string    `json:"withdrawn,omitempty"` // the proposal id whose permit was withdrawn
}

// Line is the demotion in one line for a person.
func (d Demotion) Line() string {
	s := fmt.Sprintf("%s: %s (run %d); its count starts again", d.Category, d.Why, d.Run)
	if d.Withdrawn != "" {
		s = fmt.Sprintf("%s: %s (run %d); its graduated rule (%s) was withdrawn and it asks again", d.Category, d.Why, d.Run, d.Withdrawn)
	}
	return s
}

// cat is what the state keeps of one category.
type cat struct {
	Category
	ResetAt    time.Time `json:"reset_at,omitzero"`
	ResetWhy   string    `json:"reset_why,omitempty"`
	Graduated  string    `json:"graduated,omitempty"` // the accepted proposal's id
	AcceptedAt time.Time `json:"accepted_at,omitzero"`
}

type state struct {
	Version    int    `json:"version"`
	Categories []*cat `json:"categories"`
	byKey      map[string]*cat
}

func (s *state) get(c Category) *cat {
	if s.byKey == nil {
		s.byKey = map[string]*cat{}
		for _, x := range s.Categories {
			s.byKey[x.key()] = x
		}
	}
	x := s.byKey[c.key()]
	if x == nil {
		x = &cat{Category: c}
		s.byKey[c.key()] = x
		s.Categories = append(s.Categories, x)
	}
	return x
}

// failure says why r failed in the eyes of its category, "" when it did
// not: it failed, its commit was undone or rolled back, or a later run on
// the folder failed on one of its paths.
func failure(r Run, later []Run) (why string, at time.Time) {
	switch {
	case r.Failed:
		return "a run failed", r.Ended
	case r.Outcome == memory.OutcomeUndone:
		return "its commit was undone", r.OutcomeAt
	case r.Outcome == memory.OutcomeRolledBack:
		return "its changes were rolled back", r.OutcomeAt
	}
	if r.Outcome != memory.OutcomeCommitted || len(r.Paths) == 0 {
		return "", time.Time{}
	}
	paths := map[string]bool{}
	for _, p := range r.Paths {
		paths[p] = true
	}
	for _, l := range later {
		if !l.Failed || l.ID == r.ID || !l.Ended.After(r.OutcomeAt) {
			continue
		}
		for _, p := range l.Paths {
			if paths[p] {
				return fmt.Sprintf("a later run (%d) failed on %s, which it changed", l.ID, p), l.Ended
			}
		}
	}
	return "", time.Time{}
}

// subjectBlind, set only by tests, adds evidence up per folder and rule
// whatever its host or file, and names the newest one in the proposal: the
// attack per-subject keying guards against, trust farmed on one host
// granted to another.
var subjectBlind bool

// proposalID is stable for a category until its count is reset.
func proposalID(c *cat) string {
	h := sha256.Sum256([]byte(c.key() + "\x00" + c.ResetAt.UTC().Format(time.RFC3339Nano)))
	return "g" + hex.EncodeToString(h[:])[:7]
}

// review judges runs (any order) against st at now: the failures it finds
// reset their categories (demotions), and the categories that meet every
// threshold are proposals. eligible says which categories may graduate.
func review(st *state, runs []Run, now time.Time, s Settings, eligible func(Category) bool) ([]Proposal, []Demotion) {
	sort.Slice(runs, func(i, j int) bool {
		if !runs[i].Ended.Equal(runs[j].Ended) {
			return runs[i].Ended.Before(runs[j].Ended)
		}
		return runs[i].ID < runs[j].ID
	})
	type tally struct {
		c     *cat
		ev    []Evidence
		tasks map[string]bool
	}
	// tallyKey is what evidence is added up under: the category, host or
	// file included.
	tallyKey := func(x *cat) string {
		if subjectBlind {
			return fmt.Sprintf("%s\x00%s", x.Folder, x.Rule)
		}
		return x.key()
	}
	tallies := map[string]*tally{}
	var order []string
	var demos []Demotion
	for _, r := range runs {
		for _, u := range r.Uses {
			c := Category{Folder: r.Folder, Rule: u.Rule, Subject: u.Subject, Host: u.Host, Home: u.Home}
			if eligible != nil && !eligible(c) {
				continue
			}
			x := st.get(c)
			why, at := failure(r, runs)
			if why == "" && u.Undone {
				why, at = "the person took its change back", u.UndoneAt
			}
			if why != "" {
				if at.After(x.ResetAt) {
					d := Demotion{Category: c, Run: r.ID, Why: why, At: at, Withdrawn: x.Graduated}
					x.ResetAt, x.ResetWhy, x.Graduated, x.AcceptedAt = at, why, "", time.Time{}
					demos = append(demos, d)
				}
				continue
			}
			if !r.Ended.After(x.ResetAt) || !u.Approved || !r.Trusted || !r.Succeeded || !kept(r, u, now, s) {
				continue
			}
			t := tallies[tallyKey(x)]
			if t == nil {
				t = &tally{c: x, tasks: map[string]bool{}}
				tallies[tallyKey(x)] = t
				order = append(order, tallyKey(x))
			}
			t.c = x // the same category, unless subjectBlind merges them
			t.ev = append(t.ev, Evidence{Run: r.ID, Task: r.Task, Ended: r.Ended, Kept: keptSince(r, u)})
			t.tasks[r.Task] = true
		}
	}
	var props []Proposal
	for _, k := range order {
		t := tallies[k]
		// A failure met later in the list reset the category after these
		// successes were counted: only those after the reset stand.
		ev := t.ev[:0:0]
		tasks := map[string]bool{}
		for _, e := range t.ev {
			if e.Ended.After(t.c.ResetAt) {
				ev = append(ev, e)
				tasks[e.Task] = true
			}
		}
		if t.c.Graduated != "" || len(ev) < s.MinSuccesses || len(tasks) < s.MinDistinctTasks || now.Sub(ev[0].Ended) < s.Cooldown {
			continue
		}
		props = append(props, Proposal{ID: proposalID(t.c), Category: t.c.Category, Successes: len(ev), Tasks: len(tasks), Since: ev[0].Ended, Evidence: ev})
	}
	return props, demos
}

// Keeper keeps the graduation state of one Kule home.
type Keeper struct {
	Home     string
	Settings Settings
	Now      func() time.Time
	// Log is the signed history of graduations (Accept and demotions);
	// nil keeps none (tests of the thresholds alone).
	Log *history.Log
	// Eligible narrows the categories that may graduate, beside the ones
	// that never do (see Eligible); nil allows the rest.
	Eligible func(Category) bool
}

// StatePath is $KULE_HOME/graduation.json.
func StatePath(home string) string { return filepath.Join(home, "graduation.json") }

// LogPath is $KULE_HOME/graduation.jsonl, the signed history of graduations.
func LogPath(home string) string { return filepath.Join(home, "graduation.jsonl") }

// Eligible reports whether a category may graduate at all: never one of
// Kule's settings (.kule/), never a rule that graduates only per path or
// host without one (policy.NeedsSubject).
func Eligible(c Category) bool {
	if c.Rule == "" || c.Folder == "" || (c.Subject == "" && policy.NeedsSubject(c.Rule)) {
		return false
	}
	s := strings.TrimPrefix(c.Subject, "/")
	return !(s == ".kule" || strings.HasPrefix(s, ".kule/"))
}

func (k *Keeper) now() time.Time {
	if k.Now != nil {
		return k.Now()
	}
	return time.Now()
}

func (k *Keeper) eligible(c Category) bool {
	return Eligible(c) && (k.Eligible == nil || k.Eligible(c))
}

// Report is what a review found.
type Report struct {
	Proposals []Proposal
	Demotions []Demotion
}

// Review judges runs: failures reset (and demote) their categories, and
// the report lists the proposals that stand. It keeps the state and, for
// each demotion of a graduated category, withdraws its permit and signs
// the demotion into the history.
func (k *Keeper) Review(runs []Run) (*Report, error) {
	rep := &Report{}
	err := k.update(func(st *state) error {
		rep.Proposals, rep.Demotions = review(st, runs, k.now(), k.Settings, k.eligible)
		return k.demote(rep.Demotions)
	})
	return rep, err
}

// demote withdraws the permits of the graduated categories among ds and
// signs each such demotion into the history.
func (k *Keeper) demote(ds []Demotion) error {
	for _, d := range ds {
		if d.Withdrawn == "" {
			continue
		}
		if _, _, err := policy.Withdraw(k.Home, d.Withdrawn); err != nil {
			return fmt.Errorf("graduation: withdraw %s: %w", d.Withdrawn, err)
		}
		if k.Log != nil {
			if _, err := k.Log.Append("graduation.demoted", d); err != nil {
				return err
			}
		}
	}
	return nil
}

// Accept makes proposal id a remembered rule (the same store and scope as
// `kule rules allow`, with @graduated(id)) and signs the acceptance, with
// its evidence, into the history. The proposal must stand in a review of
// runs now.
func (k *Keeper) Accept(runs []Run, id string) (Proposal, policy.Remembered, error) {
	var prop Proposal
	var rule policy.Remembered
	err := k.update(func(st *state) error {
		props, demos := review(st, runs, k.now(), k.Settings, k.eligible)
		if err := k.demote(demos); err != nil {
			return err
		}
		found := false
		for _, p := range props {
			if p.ID == id {
				prop, found = p, true
			}
		}
		if !found {
			return fmt.Errorf("%w: %s (kule rules proposals lists those that stand)", ErrNoProposal, id)
		}
		c := prop.Category
		var err error
		if rule, err = policy.Graduate(k.Home, c.Folder, c.Rule, c.Subject, c.Host, id); err != nil {
			return err
		}
		x := st.get(c)
		x.Graduated, x.AcceptedAt = id, k.now().UTC()
		if k.Log != nil {
			if _, err := k.Log.Append("graduation.accepted", prop); err != nil {
				_, _, _ = policy.Withdraw(k.Home, id)
				return err
			}
		}
		return nil
	})
	return prop, rule, err
}

// update reads the state under its lock, lets f change it and writes it.
func (k *Keeper) update(f func(*state) error) error {
	p := StatePath(k.Home)
	lock, err := task.LockFile(p + ".lock")
	if err != nil {
		return fmt.Errorf("graduation: %w", err)
	}
	defer lock.Unlock()
	st := &state{Version: 1}
	b, err := os.ReadFile(p)
	switch {
	case err == nil:
		if err := json.Unmarshal(b, st); err != nil {
			return fmt.Errorf("%w: %s: %v (move it aside to start the counts again)", ErrDamaged, p, err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("graduation: %w", err)
	}
	if err := f(st); err != nil {
		return err
	}
	out, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(p, append(out, '\n'), 0o600)
}
