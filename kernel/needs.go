package kernel

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/kulehq/kule/kernel/internal/graduation"
	"github.com/kulehq/kule/kernel/internal/history"
	"github.com/kulehq/kule/kernel/internal/secrets"
)

// What waits for a person besides the questions: a demotion that withdrew
// a graduated rule (said once by the review that made it, kept in the
// signed graduation history), and a leased secret whose renewals a task
// has used up. The daemon lists both under Needs you.

// ErrNoGraduationProposal is [graduation.ErrNoProposal]: no proposal of
// that id stands now.
var ErrNoGraduationProposal = graduation.ErrNoProposal

// Errors of a grant a caller can test for: [secrets.ErrNotFound] (no
// secret of that name) and [secrets.ErrBadName] (not a secret's name).
var (
	ErrSecretNotFound = secrets.ErrNotFound
	ErrBadSecretName  = secrets.ErrBadName
)

// RecentDemotions are the demotions signed into $KULE_HOME/graduation.jsonl
// at or after since, newest first: the categories whose graduated rule a
// failure withdrew, so that they ask again.
func (k *Kernel) RecentDemotions(since time.Time) ([]GraduationDemotion, error) {
	es, err := history.Open(graduation.LogPath(k.store.Root), nil).Entries()
	if err != nil {
		return nil, fmt.Errorf("graduation: the history of demotions: %w", err)
	}
	out := []GraduationDemotion{}
	for i := len(es) - 1; i >= 0; i-- {
		e := es[i]
		if e.Kind != "graduation.demoted" || e.Time.Before(since) {
			continue
		}
		var d GraduationDemotion
		if json.Unmarshal(e.Data, &d) == nil {
			out = append(out, d)
		}
	}
	return out, nil
}

// SpentLease is a leased secret a task has used up: while its lease is
// held, the proxy refuses the task's requests that need it; when none is
// held, the task's next run gets one lease period and no renewal.
type SpentLease struct {
	Task    string    `json:"task"`
	Secret  string    `json:"secret"`
	Hosts   []string  `json:"hosts"`
	Held    bool      `json:"held"`              // a run holds it now and its requests are refused
	Renewed int       `json:"renewed,omitempty"` // how many times the held lease was renewed
	Expired time.Time `json:"expired,omitzero"`  // when the held lease ran out
	Every   string    `json:"every,omitempty"`   // how long one lease lasts
}

// SpentLeases lists the leased secrets tasks have used up, by task: the
// held leases that ran out with no renewal left, and the tasks whose kept
// budget (tasks/<id>/leases.json) has no renewal left of a secret that
// allows some. GrantLease is the answer to each.
func (k *Kernel) SpentLeases(now time.Time) ([]SpentLease, error) {
	store, err := secrets.Open(k.store.Root)
	if err != nil {
		return nil, err
	}
	held, err := store.Leases().List()
	if err != nil {
		return nil, err
	}
	specs := map[string]*secrets.Secret{}
	spec := func(name string) *secrets.Secret {
		if s, ok := specs[name]; ok {
			return s
		}
		var sp *secrets.Secret
		if s, err := store.Get(name); err == nil && s.Lease != nil {
			s.Value = "" // only the spec is wanted here
			sp = &s
		}
		specs[name] = sp
		return sp
	}
	every := func(name string) string {
		if s := spec(name); s != nil {
			return s.Lease.Every.String()
		}
		return ""
	}
	out := []SpentLease{}
	seen := map[string]bool{}
	for _, l := range held {
		key := l.Holder + "\x00" + l.Secret
		if seen[key] {
			continue
		}
		seen[key] = true // a task's held lease says more than its kept budget
		if l.Left > 0 || now.Before(l.Expires) {
			continue
		}
		out = append(out, SpentLease{Task: l.Holder, Secret: l.Secret, Hosts: l.Hosts, Held: true, Renewed: l.Renewed, Expired: l.Expires, Every: every(l.Secret)})
	}
	ts, err := k.store.List()
	if err != nil {
		return nil, err
	}
	for _, t := range ts {
		for name, left := range leaseBudget(t) {
			if left > 0 || seen[t.ID+"\x00"+name] {
				continue
			}
			s := spec(name)
			if s == nil || s.Lease.Renewals == 0 {
				// Gone, no longer leased, or kept with one lease period
				// a run by choice.
				continue
			}
			out = append(out, SpentLease{Task: t.ID, Secret: name, Hosts: s.Hosts, Every: every(name)})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Task != out[j].Task {
			return out[i].Task < out[j].Task
		}
		return out[i].Secret < out[j].Secret
	})
	return out, nil
}
