package policy

import (
	"fmt"
	"os"
	"strings"
	"time"

	cedar "github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/ast"
	"github.com/cedar-policy/cedar-go/types"

	"github.com/kulehq/kule/kernel/internal/atomicfile"
	"github.com/kulehq/kule/kernel/internal/task"
)

// needsSubject are the rules that graduate only for one host or one path:
// lifted for a whole folder they would let through anything at all (any
// host, any file of the home, any change).
var needsSubject = map[string]bool{
	"unknown-hosts": true,
	"home-writes":   true,
	"every-change":  true,
	NoRule:          true,
}

// NeedsSubject reports whether rule graduates only for one path or host.
func NeedsSubject(rule string) bool { return needsSubject[rule] }

// Graduate keeps a graduated permit in rules.cedar, beside the approvals
// `kule rules allow` keeps: for folder, it lifts rule for subject (a path,
// or a host:port when host), or for every path of the folder when subject
// is "". id names the graduation proposal it came from; Withdraw takes it
// back by that id. A permit of that id already kept is returned as it is.
func Graduate(kuleHome, folder, rule, subject string, host bool, id string) (Remembered, error) {
	if id == "" || rule == "" || strings.ContainsAny(id, "\"\\\n") {
		return Remembered{}, fmt.Errorf("policy: graduate: %w (an id and a rule are needed)", ErrPolicy)
	}
	if subject == "" && needsSubject[rule] {
		return Remembered{}, fmt.Errorf("policy: graduate: %s graduates only for one path or host: %w", rule, ErrPolicy)
	}
	folder = cleanFolder(folder)
	lock, err := task.LockFile(RulesPath(kuleHome) + ".lock")
	if err != nil {
		return Remembered{}, fmt.Errorf("policy: graduate: %w", err)
	}
	defer lock.Unlock()
	have, err := ReadRemembered(kuleHome)
	if err != nil {
		return Remembered{}, err
	}
	for _, r := range have {
		if r.Graduated == id {
			return r, nil
		}
	}
	src, err := os.ReadFile(RulesPath(kuleHome))
	if err != nil && !os.IsNotExist(err) {
		return Remembered{}, fmt.Errorf("policy: graduate: %w", err)
	}
	pol := ast.Annotation("rule", types.String(rule)).
		Annotation("folder", types.String(folder)).
		Annotation("added", types.String(time.Now().UTC().Format(time.RFC3339))).
		Annotation("graduated", types.String(id)).
		Permit()
	switch {
	case subject == "":
	case host:
		h, p, err := SplitHostPort(subject)
		if err != nil {
			return Remembered{}, err
		}
		pol = pol.ResourceEq(types.NewEntityUID(HostType, types.String(hostKey(h, p))))
	default:
		pol = pol.ResourceEq(types.NewEntityUID(PathType, types.String(cleanPath(subject))))
	}
	one := cedar.NewPolicyFromAST(pol).MarshalCedar()
	if back, err := cedar.NewPolicyListFromBytes("", one); err != nil || len(back) != 1 {
		return Remembered{}, fmt.Errorf("policy: graduate: %q cannot be written as a rule: %w", subject, ErrPolicy)
	}
	var text strings.Builder
	text.Write(src)
	if len(src) == 0 {
		text.WriteString("// Approvals Kule remembered (kule commit --approve --remember, kule rules allow, kule rules accept).\n// `kule rules` lists them; `kule rules forget N` takes one back.\n")
	}
	if !strings.HasSuffix(text.String(), "\n") {
		text.WriteString("\n")
	}
	text.WriteString("\n")
	text.Write(one)
	text.WriteString("\n")
	if err := atomicfile.Write(RulesPath(kuleHome), []byte(text.String()), 0o600); err != nil {
		return Remembered{}, fmt.Errorf("policy: graduate: %w (nothing was kept)", err)
	}
	all, err := ReadRemembered(kuleHome)
	if err != nil {
		// What would not read back is not left in force.
		_ = atomicfile.Write(RulesPath(kuleHome), src, 0o600)
		return Remembered{}, err
	}
	return all[len(all)-1], nil
}

// Withdraw takes back the graduated permit made from proposal id; ok is
// false when none is kept (withdrawn already, or forgotten by hand).
func Withdraw(kuleHome, id string) (gone Remembered, ok bool, err error) {
	rs, err := ReadRemembered(kuleHome)
	if err != nil {
		return Remembered{}, false, err
	}
	for _, r := range rs {
		if r.Graduated == id && id != "" {
			g, err := Forget(kuleHome, r.N)
			return g, err == nil, err
		}
	}
	return Remembered{}, false, nil
}

// WithoutGraduated is e without its graduated permits: the engine for a
// run whose input was not all trusted (a prompt from a chat user who is
// not the operator, recalled items that are not Kule's own). Its changes
// ask as they did before the graduation.
func (e *Engine) WithoutGraduated() *Engine {
	out := *e
	out.remembered = cedar.PolicyMap{}
	out.rules = nil
	for id, p := range e.remembered {
		if p.Annotations()["graduated"] == "" {
			out.remembered[id] = p
		}
	}
	for _, r := range e.rules {
		if !(r.Layer == LayerRemembered && r.graduated) {
			out.rules = append(out.rules, r)
		}
	}
	out.index()
	return &out
}

// HasGraduated reports whether any graduated permit is in force.
func (e *Engine) HasGraduated() bool {
	for _, r := range e.rules {
		if r.Layer == LayerRemembered && r.graduated {
			return true
		}
	}
	return false
}

// Graduates reports whether rule is one whose questions may graduate in
// this engine: a forbid that asks, whose approvals may be remembered, from
// Kule's built-ins or the person's (or group's) policy, never the folder's
// own .kule/policy.cedar.
func (e *Engine) Graduates(rule string) bool {
	for _, r := range e.rules {
		if r.ID == rule && r.Effect == "forbid" && r.Verdict == Ask && r.Remember && r.Layer != LayerFolder && r.Layer != LayerRemembered {
			return true
		}
	}
	return false
}
