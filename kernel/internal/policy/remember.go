package policy

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	cedar "github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/ast"
	"github.com/cedar-policy/cedar-go/types"
	xast "github.com/cedar-policy/cedar-go/x/exp/ast"

	"github.com/kulehq/kule/kernel/internal/atomicfile"
	"github.com/kulehq/kule/kernel/internal/task"
)

// RulesPath is $KULE_HOME/rules.cedar, the remembered approvals.
func RulesPath(kuleHome string) string { return filepath.Join(kuleHome, "rules.cedar") }

// Remembered is one remembered approval: a narrow permit for one folder, one
// rule and one path or host.
type Remembered struct {
	N       int    // its number in `kule rules`, from 1
	Rule    Rule   // For: the rule it lets through; Folder: the folder
	Subject string // the path or host:port
	Host    bool   // Subject is a host:port
	Added   string // when it was remembered (RFC 3339)
	// Graduated is the id of the graduation proposal this rule was made
	// from (package graduation), "" for an approval the person remembered.
	// A graduated rule may name no path (Subject ""): it then lifts its
	// rule for every path of the folder. It never applies to a run with
	// untrusted input (Engine.WithoutGraduated).
	Graduated string
	policy    *cedar.Policy
}

// String renders the remembered approval as `kule rules` lists it.
func (r Remembered) String() string {
	if r.Graduated != "" {
		subject := "every path"
		if r.Subject != "" {
			subject = quote(r.Subject)
		}
		return fmt.Sprintf("%d. %s · lets %s through in %s (graduated, proposal %s)", r.N, subject, r.Rule.For, r.Rule.Folder, r.Graduated)
	}
	return fmt.Sprintf("%d. %s · lets %s through in %s", r.N, quote(r.Subject), r.Rule.For, r.Rule.Folder)
}

// ReadRemembered reads rules.cedar, in file order. Each rule there must be
// a permit with @rule and @folder whose resource is one path or one host; a
// file that breaks this is an error naming file and line.
func ReadRemembered(kuleHome string) ([]Remembered, error) {
	p := RulesPath(kuleHome)
	src, err := readRegular(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("policy: %s: %w (nothing is committed until it can be read)", p, err)
	}
	list, err := parseFile(p, src)
	if err != nil {
		return nil, err
	}
	out := make([]Remembered, 0, len(list))
	for i, pol := range list {
		ann := pol.Annotations()
		line := pol.Position().Line
		r := Remembered{N: i + 1, policy: pol, Added: string(ann["added"])}
		r.Rule = Rule{
			Layer: LayerRemembered, Effect: "permit", File: p, Line: line,
			For: string(ann["rule"]), Folder: string(ann["folder"]),
		}
		r.Rule.ID = fmt.Sprintf("remembered-%d", r.N)
		if pol.Effect() != cedar.Permit || r.Rule.For == "" || r.Rule.Folder == "" {
			return nil, fmt.Errorf("policy: %s:%d: a remembered rule is a permit with @rule and @folder: %w (fix or delete that rule in the file; nothing is committed until then)", p, line, ErrPolicy)
		}
		r.Graduated = string(ann["graduated"])
		if _, all := (*xast.Policy)(pol.AST()).Resource.(xast.ScopeTypeAll); all && r.Graduated != "" && !needsSubject[r.Rule.For] {
			out = append(out, r)
			continue
		}
		eq, ok := (*xast.Policy)(pol.AST()).Resource.(xast.ScopeTypeEq)
		if !ok || (eq.Entity.Type != PathType && eq.Entity.Type != HostType) {
			return nil, fmt.Errorf("policy: %s:%d: a remembered rule names one path or one host (resource == Kule::Path::\"…\" or Kule::Host::\"…\"): %w", p, line, ErrPolicy)
		}
		r.Subject = string(eq.Entity.ID)
		r.Host = eq.Entity.Type == HostType
		out = append(out, r)
	}
	return out, nil
}

// cleanFolder is the form a folder is remembered under.
func cleanFolder(folder string) string {
	if a, err := filepath.Abs(folder); err == nil {
		return a
	}
	return filepath.Clean(folder)
}

// Remember keeps the approvals of the given verdicts for the folder: for
// each verdict that asked and may be remembered, one permit per rule that
// asked, for that path or host. Verdicts that passed, were denied, asked
// for a reason other than a name (mass deletes, history rewrites, links) or
// touch .kule/ are skipped. It returns what it added (possibly nothing) and
// the paths or hosts it could not keep because Cedar cannot write their
// names (a name that is not UTF-8).
func Remember(kuleHome, folder string, verdicts []Verdict) (added []Remembered, notKept []string, err error) {
	var adds []addition
	for _, v := range verdicts {
		if v.Outcome != Ask || !v.Rememberable {
			continue
		}
		r := v.Request
		if r.Action != NetConnect && (underKule(r.Path) || (r.From != "" && underKule(r.From))) {
			continue
		}
		for _, rule := range v.Rules {
			if r.Action == NetConnect {
				adds = append(adds, addition{rule: rule, host: true, subject: hostKey(cleanHost(r.Host), r.Port)})
			} else {
				adds = append(adds, addition{rule: rule, subject: cleanPath(r.Path)})
			}
		}
	}
	return addRemembered(kuleHome, folder, adds)
}

type addition struct {
	rule, subject string
	host          bool
}

// AllowHost remembers that connections from tasks on folder to host:port
// pass (the rule they lift is unknown-hosts).
func AllowHost(kuleHome, folder, hostPort string) (Remembered, error) {
	h, p, err := SplitHostPort(hostPort)
	if err != nil {
		return Remembered{}, err
	}
	added, notKept, err := addRemembered(kuleHome, folder, []addition{{rule: "unknown-hosts", host: true, subject: hostKey(h, p)}})
	if err != nil {
		return Remembered{}, err
	}
	if len(notKept) > 0 {
		return Remembered{}, fmt.Errorf("policy: %q: %w (it cannot be written as a rule)", hostPort, ErrBadHost)
	}
	if len(added) == 0 {
		// Already there: find it.
		rs, err := ReadRemembered(kuleHome)
		if err != nil {
			return Remembered{}, err
		}
		for _, r := range rs {
			if r.Host && r.Subject == hostKey(h, p) && r.Rule.Folder == cleanFolder(folder) && r.Rule.For == "unknown-hosts" {
				return r, nil
			}
		}
	}
	return added[0], nil
}

// SplitHostPort reads HOST:PORT (IPv6 in brackets).
func SplitHostPort(s string) (string, int, error) {
	h, ps, err := net.SplitHostPort(strings.TrimSpace(s))
	if err != nil {
		return "", 0, fmt.Errorf("policy: %q: %w (write it as api.example.com:443)", s, ErrBadHost)
	}
	p, err := strconv.Atoi(ps)
	h = cleanHost(h)
	if err != nil || p < 1 || p > 65535 || h == "" || strings.ContainsAny(h, " /\"\\") {
		return "", 0, fmt.Errorf("policy: %q: %w (write it as api.example.com:443)", s, ErrBadHost)
	}
	return h, p, nil
}

func addRemembered(kuleHome, folder string, adds []addition) ([]Remembered, []string, error) {
	if len(adds) == 0 {
		return nil, nil, nil
	}
	folder = cleanFolder(folder)
	lock, err := task.LockFile(RulesPath(kuleHome) + ".lock")
	if err != nil {
		return nil, nil, fmt.Errorf("policy: remember: %w", err)
	}
	defer lock.Unlock()
	have, err := ReadRemembered(kuleHome)
	if err != nil {
		return nil, nil, err
	}
	src, err := os.ReadFile(RulesPath(kuleHome))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("policy: remember: %w", err)
	}
	key := func(rule, subject string, host bool) string {
		return fmt.Sprintf("%s\x00%s\x00%s\x00%v", folder, rule, subject, host)
	}
	seen := map[string]bool{}
	for _, r := range have {
		if r.Rule.Folder == folder {
			seen[key(r.Rule.For, r.Subject, r.Host)] = true
		}
	}
	var text strings.Builder
	text.Write(src)
	if len(src) == 0 {
		text.WriteString("// Approvals Kule remembered (kule commit --approve --remember, kule rules allow).\n// `kule rules` lists them; `kule rules forget N` takes one back.\n")
	}
	now := time.Now().UTC().Format(time.RFC3339)
	n := 0
	var notKept []string
	for _, a := range adds {
		k := key(a.rule, a.subject, a.host)
		if seen[k] || a.subject == "" {
			continue
		}
		typ := PathType
		if a.host {
			typ = HostType
		}
		pol := ast.Annotation("rule", types.String(a.rule)).
			Annotation("folder", types.String(folder)).
			Annotation("added", types.String(now)).
			Permit().ResourceEq(types.NewEntityUID(typ, types.String(a.subject)))
		one := cedar.NewPolicyFromAST(pol).MarshalCedar()
		// What cannot be read back exactly is not kept.
		back, err := cedar.NewPolicyListFromBytes("", one)
		if err != nil || len(back) != 1 {
			notKept = append(notKept, a.subject)
			continue
		}
		if eq, ok := (*xast.Policy)(back[0].AST()).Resource.(xast.ScopeTypeEq); !ok || string(eq.Entity.ID) != a.subject {
			notKept = append(notKept, a.subject)
			continue
		}
		seen[k] = true
		if !strings.HasSuffix(text.String(), "\n") {
			text.WriteString("\n")
		}
		text.WriteString("\n")
		text.Write(one)
		text.WriteString("\n")
		n++
	}
	if n == 0 {
		return nil, notKept, nil
	}
	if err := atomicfile.Write(RulesPath(kuleHome), []byte(text.String()), 0o600); err != nil {
		return nil, nil, fmt.Errorf("policy: remember: %w (nothing was remembered)", err)
	}
	all, err := ReadRemembered(kuleHome)
	if err != nil {
		return nil, nil, err
	}
	return all[len(all)-n:], notKept, nil
}

// Forget takes back remembered approval number n (as `kule rules` numbers
// them) and returns it.
func Forget(kuleHome string, n int) (Remembered, error) { return ForgetIf(kuleHome, n, nil) }

// ForgetIf is Forget when rule n is still the one the caller showed (is
// reports true), judged under the same lock as the cut: between a list
// and a forget another command can forget a rule and move the numbers.
// A rule that is not the one shown is left, and nothing is changed.
func ForgetIf(kuleHome string, n int, is func(Remembered) bool) (Remembered, error) {
	lock, err := task.LockFile(RulesPath(kuleHome) + ".lock")
	if err != nil {
		return Remembered{}, fmt.Errorf("policy: forget: %w", err)
	}
	defer lock.Unlock()
	rs, err := ReadRemembered(kuleHome)
	if err != nil {
		return Remembered{}, err
	}
	if n < 1 || n > len(rs) {
		return Remembered{}, fmt.Errorf("policy: forget %d: %w (`kule rules` lists %d)", n, ErrNoSuchRule, len(rs))
	}
	gone := rs[n-1]
	if is != nil && !is(gone) {
		return Remembered{}, fmt.Errorf("policy: forget %d: %w; nothing was changed", n, ErrRuleMoved)
	}
	src, err := os.ReadFile(RulesPath(kuleHome))
	if err != nil {
		return Remembered{}, fmt.Errorf("policy: forget: %w", err)
	}
	lines := strings.SplitAfter(string(src), "\n")
	// Each remembered rule was written as one block: its annotations, then
	// its permit, ending at the line with the permit's ";". Cut from its
	// first annotation to the end of its statement.
	start := gone.Rule.Line - 1
	for start > 0 && strings.HasPrefix(strings.TrimSpace(lines[start-1]), "@") {
		start--
	}
	end := gone.Rule.Line - 1
	for end < len(lines) && !strings.HasSuffix(strings.TrimSpace(lines[end]), ";") {
		end++
	}
	if end >= len(lines) {
		return Remembered{}, fmt.Errorf("policy: forget %d: cannot find where rule %d ends in %s; nothing was changed: %w", n, n, RulesPath(kuleHome), ErrPolicy)
	}
	kept := strings.Join(append(lines[:start:start], lines[end+1:]...), "")
	if err := atomicfile.Write(RulesPath(kuleHome), []byte(kept), 0o600); err != nil {
		return Remembered{}, fmt.Errorf("policy: forget: %w (nothing was changed)", err)
	}
	after, err := ReadRemembered(kuleHome)
	if err != nil || len(after) != len(rs)-1 {
		// Put it back as it was: a half-cut file is worse than none.
		_ = atomicfile.Write(RulesPath(kuleHome), src, 0o600)
		return Remembered{}, fmt.Errorf("policy: forget %d: the file would not read back; it was left as it was: %w", n, ErrPolicy)
	}
	return gone, nil
}

// Connection is one line of a task's network.jsonl: a connection the task
// asked for and what the policy said.
type Connection struct {
	Time    string `json:"time,omitempty"` // RFC 3339
	Host    string `json:"host"`
	Port    int    `json:"port"`
	Verdict string `json:"verdict"` // pass, ask or deny
	Rule    string `json:"rule,omitempty"`
}

// Past is what one past task asked of one host:port.
type Past struct {
	Task    string // task id
	Folder  string
	Count   int    // connections that did not pass
	First   string // time of the first
	Last    string // time of the last
	Verdict string // the last verdict
}

// WouldLet reads past tasks' network.jsonl under $KULE_HOME/tasks and
// returns, per task on folder (every task when folder is ""), the
// connections to host:port that did not pass: what an allowance would have
// let through. Lines that do not parse are skipped.
func WouldLet(kuleHome, folder, hostPort string) ([]Past, error) {
	h, p, err := SplitHostPort(hostPort)
	if err != nil {
		return nil, err
	}
	if folder != "" {
		folder = cleanFolder(folder)
	}
	files, err := filepath.Glob(filepath.Join(kuleHome, "tasks", "*", "network.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("policy: past connections: %w", err)
	}
	var out []Past
	for _, f := range files {
		dir := filepath.Dir(f)
		var t struct {
			Folder string `json:"folder"`
		}
		if b, err := os.ReadFile(filepath.Join(dir, "task.json")); err == nil {
			_ = json.Unmarshal(b, &t)
		}
		if folder != "" && t.Folder != folder {
			continue
		}
		past := Past{Task: filepath.Base(dir), Folder: t.Folder}
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			var c Connection
			if json.Unmarshal(sc.Bytes(), &c) != nil {
				continue
			}
			if cleanHost(c.Host) != h || c.Port != p || c.Verdict == "pass" {
				continue
			}
			past.Count++
			if past.First == "" {
				past.First = c.Time
			}
			past.Last, past.Verdict = c.Time, c.Verdict
		}
		fh.Close()
		if past.Count > 0 {
			out = append(out, past)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Task < out[j].Task })
	return out, nil
}
