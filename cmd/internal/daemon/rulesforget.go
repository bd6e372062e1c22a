package daemon

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/kulehq/kule/kernel"
)

// Settings → Remembered rules: Forget takes one remembered approval back, through the same
// kernel call as kule rules forget N. Rules are named by their number in the list, and the
// number moves when another is forgotten (in a terminal, in another window), so the page
// also names the rule it showed: when number N is no longer that rule, nothing is forgotten.

// ForgetRequest is the rule the page showed under number N.
type ForgetRequest struct {
	Subject string `json:"subject"`
	For     string `json:"for"`
	Folder  string `json:"folder"`
}

// errRulesChanged: the rule under the number the page sent is not the one it showed.
var errRulesChanged = errors.New("the remembered rules changed since the page listed them")

// ForgetView is what was forgotten, and what asks again from now on.
type ForgetView struct {
	Forgot RuleView `json:"forgot"`
	Asks   string   `json:"asks"`
}

// asksAgain says, in words, what asks a person again once r is forgotten.
func asksAgain(r RuleView) string {
	switch {
	case r.Host:
		return fmt.Sprintf("A connection to %s from a task on %s asks you again.", r.Subject, r.Folder)
	case r.Subject == "":
		return fmt.Sprintf("Changes that %s lets through ask you again in %s.", r.For, r.Folder)
	default:
		return fmt.Sprintf("A change to %s that %s lets through asks you again in %s.", r.Subject, r.For, r.Folder)
	}
}

func ruleView(x kernel.RememberedRule) RuleView {
	v := RuleView{N: x.N, Subject: x.Subject, Host: x.Host, For: x.Rule.For, Folder: x.Rule.Folder, Added: x.Added}
	v.Asks = asksAgain(v)
	return v
}

func (d *Daemon) forgetRule(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.Atoi(strings.TrimSpace(r.PathValue("n")))
	if err != nil || n < 1 {
		fail(w, fmt.Errorf("%w: %q is not a rule's number (GET /api/rules lists them); nothing was forgotten", errBadRequest, r.PathValue("n")))
		return
	}
	var in ForgetRequest
	if err := readBody(r, &in); err != nil {
		fail(w, err)
		return
	}
	rs, err := d.k.RememberedRules()
	if err != nil {
		fail(w, err)
		return
	}
	if n > len(rs) || !sameRule(ruleView(rs[n-1]), in) {
		fail(w, fmt.Errorf("%w: number %d is not the rule the page showed; nothing was forgotten. Reload the list and forget it again", errRulesChanged, n))
		return
	}
	// Judged again under the rules' lock: a forget elsewhere between the
	// list above and the cut would move the numbers.
	gone, err := kernel.ForgetIf(d.home, n, func(x kernel.RememberedRule) bool { return sameRule(ruleView(x), in) })
	if errors.Is(err, kernel.ErrRuleMoved) {
		fail(w, fmt.Errorf("%w: number %d is not the rule the page showed; nothing was forgotten. Reload the list and forget it again", errRulesChanged, n))
		return
	}
	if err != nil {
		fail(w, err)
		return
	}
	v := ruleView(gone)
	d.Bus.Publish("task", "", map[string]any{"action": "rules"})
	writeJSON(w, 200, ForgetView{Forgot: v, Asks: v.Asks})
}

// sameRule: the request names r. A request that names nothing names no rule: a number
// alone could be any rule by the time it arrives.
func sameRule(r RuleView, in ForgetRequest) bool {
	return in.For != "" && in.Folder != "" && r.Subject == in.Subject && r.For == in.For && r.Folder == in.Folder
}

func (d *Daemon) ruleRoutes(m *http.ServeMux) {
	m.HandleFunc("DELETE /api/rules/{n}", d.forgetRule)
}
