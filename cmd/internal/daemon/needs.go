package daemon

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/kulehq/kule/kernel"
)

// Needs you, beyond the questions and the interrupted runs: the graduation
// proposals that stand (each with its evidence; Accept makes the
// remembered rule as `kule rules accept` does), the demotions that withdrew
// a graduated rule, and the leased secrets a task has used up (Grant gives
// renewals as `kule secrets grant` does). Each action is the kernel's one
// call; the page only asks for it.

// demotionsShown is how long a demotion stays under Needs you after the
// review that made it: long enough to be seen after a weekend away.
const demotionsShown = 14 * 24 * time.Hour

// NeedsView is what GET /api/needs lists.
type NeedsView struct {
	Proposals []kernel.GraduationProposal `json:"proposals"`
	Demotions []kernel.GraduationDemotion `json:"demotions"`
	Leases    []kernel.SpentLease         `json:"spent_leases"`
	// Problems say what could not be read; the rest of the list stands.
	Problems []string `json:"problems"`
}

// listNeeds: GET /api/needs. Each part is read on its own, so a memory or
// a ledger that cannot be read hides only its own part, and says why.
func (d *Daemon) listNeeds(w http.ResponseWriter, r *http.Request) {
	out := NeedsView{Proposals: []kernel.GraduationProposal{}, Demotions: []kernel.GraduationDemotion{}, Leases: []kernel.SpentLease{}, Problems: []string{}}
	// The review signs the demotions it makes into the history before
	// they are read back below, so a fresh one is listed with the rest.
	if rep, err := d.k.ReviewGraduation(r.Context(), ""); err != nil {
		out.Problems = append(out.Problems, "proposals: "+err.Error())
	} else {
		out.Proposals = append(out.Proposals, rep.Proposals...)
	}
	if ds, err := d.k.RecentDemotions(time.Now().Add(-demotionsShown)); err != nil {
		out.Problems = append(out.Problems, "demotions: "+err.Error())
	} else {
		out.Demotions = ds
	}
	if ls, err := d.k.SpentLeases(time.Now()); err != nil {
		out.Problems = append(out.Problems, "leases: "+err.Error())
	} else {
		out.Leases = ls
	}
	writeJSON(w, http.StatusOK, out)
}

// AcceptedView is what accepting a proposal made.
type AcceptedView struct {
	Proposal kernel.GraduationProposal `json:"proposal"`
	Rule     string                    `json:"rule"` // as kule rules lists it
	N        int                       `json:"n"`    // kule rules forget N takes it back
	Said     string                    `json:"said"` // what the person reads
}

// acceptProposal: POST /api/proposals/{id}/accept makes the proposal a
// remembered rule, signed into the graduation history with its evidence.
func (d *Daemon) acceptProposal(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimSpace(r.PathValue("id"))
	p, rule, err := d.k.AcceptGraduation(r.Context(), id)
	if errors.Is(err, kernel.ErrNoGraduationProposal) {
		writeJSON(w, http.StatusNotFound, apiError{Error: err.Error() + "; nothing was remembered"})
		return
	}
	if err != nil {
		fail(w, fmt.Errorf("accept %s: %w; nothing was remembered", id, err))
		return
	}
	said := fmt.Sprintf("Kept: %s. From %d successes in %d tasks since %s; one failure in %s withdraws it (kule rules forget %d takes it back now).",
		rule.String(), p.Successes, p.Tasks, p.Since.Local().Format("2006-01-02"), p.Category.String(), rule.N)
	d.Bus.Publish("needs", "", map[string]any{"action": "accepted", "proposal": p.ID})
	writeJSON(w, http.StatusOK, AcceptedView{Proposal: p, Rule: rule.String(), N: rule.N, Said: said})
}

// GrantRequest is how many renewals to add to a task's lease of a secret.
type GrantRequest struct {
	Renew int `json:"renew"`
}

// grantLease: POST /api/tasks/{id}/leases/{secret}/grant gives the task's
// leases of the secret more renewals: the held ones take them at once, a
// later run starts with them.
func (d *Daemon) grantLease(w http.ResponseWriter, r *http.Request, t *kernel.Task) {
	in := GrantRequest{Renew: 1}
	if err := readBody(r, &in); err != nil {
		fail(w, err)
		return
	}
	name := r.PathValue("secret")
	if in.Renew < 1 || in.Renew > 1000 {
		fail(w, fmt.Errorf("%w: grant: renew is between 1 and 1000; nothing was granted", errBadRequest))
		return
	}
	n, err := d.k.GrantLease(t, name, in.Renew)
	switch {
	case errors.Is(err, kernel.ErrSecretNotFound):
		writeJSON(w, http.StatusNotFound, apiError{Error: err.Error() + "; nothing was granted"})
		return
	case errors.Is(err, kernel.ErrBadSecretName):
		fail(w, fmt.Errorf("%w: %v; nothing was granted", errBadRequest, err))
		return
	case err != nil:
		fail(w, fmt.Errorf("grant %s to task %s: %w; nothing more was granted", name, t.ID, err))
		return
	}
	d.Bus.Publish("needs", t.ID, map[string]any{"action": "granted", "secret": name})
	writeJSON(w, http.StatusOK, map[string]any{"granted": in.Renew, "held": n,
		"said": fmt.Sprintf("Granted %d more renewals of %s to task %s (%d leases held now).", in.Renew, name, t.ID, n)})
}

// needsRoutes adds the endpoints of Needs you's proposals and leases, and
// the recall a prompt gets before its run (recall.go), to the API.
func (d *Daemon) needsRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /api/needs", d.listNeeds)
	m.HandleFunc("POST /api/proposals/{id}/accept", d.acceptProposal)
	m.HandleFunc("POST /api/tasks/{id}/leases/{secret}/grant", d.withTask(d.grantLease))
	m.HandleFunc("POST /api/tasks/{id}/recall", d.withTask(d.recallFor))
	m.HandleFunc("POST /api/tasks/{id}/recall/budget", d.withTask(d.acceptRecalledBudget))
}
