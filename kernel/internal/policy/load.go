package policy

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	cedar "github.com/cedar-policy/cedar-go"
	// Schema validation lives only under cedar-go's x/exp (as of v1.9.2):
	// x/exp/schema parses and resolves Kule's .cedarschema, and
	// x/exp/schema/validate type-checks each policy against it, so that a
	// person's rule naming an attribute Kule never sends, or a Kule::Host
	// where a Kule::Path is meant, is refused when it is loaded rather than
	// silently never matching. The stable packages (cedar-go, cedar-go/ast)
	// parse and evaluate policies but have no schema or validator;
	// validate takes the x/exp/ast form of a policy, which is the stable
	// one's underlying type (a conversion, no copy). x/exp is outside
	// cedar-go's version promise: go.mod pins the version, and
	// TestBuiltinsValidate with the policy tests fail on an upgrade that
	// changes these APIs. Move to the stable API once cedar-go has one.
	xast "github.com/cedar-policy/cedar-go/x/exp/ast"
	"github.com/cedar-policy/cedar-go/x/exp/schema"
	"github.com/cedar-policy/cedar-go/x/exp/schema/validate"

	"github.com/kulehq/kule/kernel/internal/lazyre"
)

//go:embed builtin/*.cedar builtin/schema.cedarschema
var builtinFS embed.FS

// The built-in policies by name.
const (
	Balanced = "balanced"
	Careful  = "careful"
)

// Choices are the built-in policies a person can choose between.
var Choices = []string{Balanced, Careful}

// Layer says where a rule comes from.
type Layer string

// The layers, in the order Load reads them.
const (
	LayerBuiltin    Layer = "built-in"
	LayerPerson     Layer = "your policy.cedar"
	LayerGroup      Layer = "the group's policy"
	LayerFolder     Layer = "the folder's .kule/policy.cedar"
	LayerRemembered Layer = "remembered"
)

// Rule is one rule in force.
type Rule struct {
	ID       string  // @id, or file:line when the rule has none
	Layer    Layer   // where it comes from
	Effect   string  // "permit" or "forbid"
	Verdict  Outcome // a forbid's @verdict (Ask or Deny); Pass for a permit
	Reason   string  // @reason
	Remember bool    // an approval of what it asks may be remembered
	File     string  // the file it was read from (builtin/… for built-ins)
	Line     int
	// For remembered permits: the rule they let through and the folder.
	For       string
	Folder    string
	graduated bool
}

// Engine judges requests with the rules Load found. It does not change once
// loaded, and Judge may be called from many goroutines at once.
type Engine struct {
	choice     string // the built-in in force, "" when the person's policy replaces it
	forbids    cedar.PolicyMap
	permits    cedar.PolicyMap
	remembered cedar.PolicyMap
	meta       map[cedar.PolicyID]*Rule
	rules      []*Rule
	byAction   map[Action]func() *actionSets
}

// Choice is the built-in policy in force, or "" when $KULE_HOME/policy.cedar
// replaces the built-ins.
func (e *Engine) Choice() string { return e.choice }

// Rules lists the rules in force, in the order they were read.
func (e *Engine) Rules() []Rule {
	out := make([]Rule, len(e.rules))
	for i, r := range e.rules {
		out[i] = *r
	}
	return out
}

// PersonPath is $KULE_HOME/policy.cedar.
func PersonPath(kuleHome string) string { return filepath.Join(kuleHome, "policy.cedar") }

// FolderPath is the folder's own .kule/policy.cedar.
func FolderPath(folder string) string { return filepath.Join(folder, ".kule", "policy.cedar") }

// Load reads the policy for one folder: the built-in choice (balanced when
// empty) or $KULE_HOME/policy.cedar, which replaces it; the folder's own
// .kule/policy.cedar (folder must be the real folder, never a task's copy);
// and the approvals remembered for that folder in $KULE_HOME/rules.cedar. A
// file that does not parse or validate is an error naming file and line, and
// no engine: nothing is committed under a broken policy.
func Load(kuleHome, folder, choice string) (*Engine, error) {
	return load(kuleHome, folder, choice, PersonPath(kuleHome), LayerPerson)
}

// LoadGroup is Load for a task in a group with a policy of its own: own, the
// path of the group's Cedar file, replaces the built-ins and the person's
// policy.cedar; an empty own takes the built-in choice even when a
// policy.cedar is there. The folder's rules and the remembered approvals
// hold as in Load.
func LoadGroup(kuleHome, folder, choice, own string) (*Engine, error) {
	return load(kuleHome, folder, choice, own, LayerGroup)
}

// Validate checks a policy text as Load would read it from the person's own
// file: it parses and every rule validates against Kule's schema.
func Validate(name string, src []byte) error {
	_, err := parseFile(name, src)
	return err
}

func load(kuleHome, folder, choice, person string, layer Layer) (*Engine, error) {
	e := &Engine{
		forbids:    cedar.PolicyMap{},
		permits:    cedar.PolicyMap{},
		remembered: cedar.PolicyMap{},
		meta:       map[cedar.PolicyID]*Rule{},
	}
	var src []byte
	err := fs.ErrNotExist // no own file: the built-in choice holds
	if person != "" {
		src, err = readRegular(person)
	}
	switch {
	case err == nil:
		if err := e.add(layer, person, src); err != nil {
			return nil, err
		}
	case errors.Is(err, fs.ErrNotExist):
		if choice == "" {
			choice = Balanced
		}
		if err := e.addBuiltin(choice); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("policy: %s: %w (nothing is committed until it can be read)", person, err)
	}
	if folder != "" {
		fp := FolderPath(folder)
		src, err := readRegular(fp)
		switch {
		case err == nil:
			if err := e.add(LayerFolder, fp, src); err != nil {
				return nil, err
			}
		case errors.Is(err, fs.ErrNotExist):
		default:
			return nil, fmt.Errorf("policy: %s: %w (nothing is committed until it can be read)", fp, err)
		}
		rs, err := ReadRemembered(kuleHome)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			if r.Rule.Folder != cleanFolder(folder) {
				continue
			}
			id := cedar.PolicyID(fmt.Sprintf("remembered/%d", r.N))
			rule := r.Rule
			rule.graduated = r.Graduated != ""
			e.remembered[id] = r.policy
			e.meta[id] = &rule
			e.rules = append(e.rules, &rule)
		}
	}
	e.index()
	return e, nil
}

// BuiltinText returns the Cedar text of a built-in policy, as it would be
// read: the rules both hold, then the choice's own.
func BuiltinText(choice string) (string, error) {
	if !validChoice(choice) {
		return "", fmt.Errorf("policy: %q: %w (choose %s)", choice, ErrUnknownChoice, strings.Join(Choices, " or "))
	}
	common, _ := builtinFS.ReadFile("builtin/common.cedar")
	own, _ := builtinFS.ReadFile("builtin/" + choice + ".cedar")
	return string(own) + "\n" + string(common), nil
}

func validChoice(c string) bool {
	for _, x := range Choices {
		if c == x {
			return true
		}
	}
	return false
}

func (e *Engine) addBuiltin(choice string) error {
	if !validChoice(choice) {
		return fmt.Errorf("policy: %q: %w (choose %s)", choice, ErrUnknownChoice, strings.Join(Choices, " or "))
	}
	e.choice = choice
	for _, f := range []string{"builtin/" + choice + ".cedar", "builtin/common.cedar"} {
		src, err := builtinFS.ReadFile(f)
		if err != nil {
			return fmt.Errorf("policy: %s: %w", f, err)
		}
		if err := e.add(LayerBuiltin, f, src); err != nil {
			return err
		}
	}
	return nil
}

// BuiltinOnly reports whether Load(kuleHome, folder, choice) reads nothing
// but the built-ins: no $KULE_HOME/policy.cedar, no folder policy, no
// remembered approvals, and a choice Kule has. Such a load cannot fail
// (TestBuiltinsValidate), so a caller may put it off until a decision
// needs it.
func BuiltinOnly(kuleHome, folder, choice string) bool {
	if choice != "" && !validChoice(choice) {
		return false
	}
	paths := []string{PersonPath(kuleHome), RulesPath(kuleHome)}
	if folder != "" {
		paths = append(paths, FolderPath(folder))
	}
	for _, p := range paths {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			return false // there, or not known to be missing
		}
	}
	return true
}

// readRegular reads a policy file, refusing anything but a regular file (a
// link in a folder could point anywhere).
func readRegular(p string) ([]byte, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	return os.ReadFile(p)
}

var inputPos = lazyre.New(`<input>:(\d+):(\d+)`)

// parseFile parses a Cedar file and validates every policy in it against
// Kule's schema. Errors name the file and line.
func parseFile(file string, src []byte) (cedar.PolicyList, error) {
	list, err := cedar.NewPolicyListFromBytes(file, src)
	if err != nil {
		msg := err.Error()
		line := "1"
		if m := inputPos.FindStringSubmatch(msg); m != nil {
			line = m[1]
			msg = strings.Replace(msg, m[0], "column "+m[2], 1)
		}
		msg = strings.TrimPrefix(msg, "parser error: ")
		return nil, fmt.Errorf("policy: %s:%s: does not parse: %s: %w (nothing is committed under it until it is fixed)", file, line, msg, ErrPolicy)
	}
	v, err := validator()
	if err != nil {
		return nil, err
	}
	for i, p := range list {
		if err := v.Policy(fmt.Sprint(i), (*xast.Policy)(p.AST())); err != nil {
			msg := strings.ReplaceAll(err.Error(), fmt.Sprintf("for policy `%d`, ", i), "")
			msg = strings.ReplaceAll(msg, "\n", "; ")
			if strings.Contains(msg, "on entity type") {
				msg += " (a rule about paths says `resource is Kule::Path`, one about hosts `resource is Kule::Host`; `kule policy --schema` prints every attribute)"
			}
			return nil, fmt.Errorf("policy: %s:%d: does not validate: %s: %w (nothing is committed under it until it is fixed)", file, p.Position().Line, msg, ErrPolicy)
		}
	}
	return list, nil
}

var validator = sync.OnceValues(func() (*validate.Validator, error) {
	src, err := builtinFS.ReadFile("builtin/schema.cedarschema")
	if err != nil {
		return nil, fmt.Errorf("policy: schema: %w", err)
	}
	var s schema.Schema
	s.SetFilename("schema.cedarschema")
	if err := s.UnmarshalCedar(src); err != nil {
		return nil, fmt.Errorf("policy: schema: %w", err)
	}
	r, err := s.Resolve()
	if err != nil {
		return nil, fmt.Errorf("policy: schema: %w", err)
	}
	return validate.New(r), nil
})

// Schema returns Kule's Cedar schema, for people who write their own policy.
func Schema() string {
	src, _ := builtinFS.ReadFile("builtin/schema.cedarschema")
	return string(src)
}

// add parses one file of one layer and adds its rules.
func (e *Engine) add(layer Layer, file string, src []byte) error {
	var list cedar.PolicyList
	var err error
	if layer == LayerBuiltin {
		// Kule's own rules: TestBuiltinsValidate checks them against the
		// schema, so a load only parses them (validating took a third of
		// every load, the schema's first resolution more).
		list, err = cedar.NewPolicyListFromBytes(file, src)
	} else {
		list, err = parseFile(file, src)
	}
	if err != nil {
		return err
	}
	for i, p := range list {
		ann := p.Annotations()
		line := p.Position().Line
		r := &Rule{Layer: layer, File: file, Line: line, Reason: string(ann["reason"])}
		r.ID = string(ann["id"])
		if r.ID == "" {
			r.ID = fmt.Sprintf("%s:%d", filepath.Base(file), line)
		}
		id := cedar.PolicyID(fmt.Sprintf("%s/%s/%d", layer, file, i))
		switch p.Effect() {
		case cedar.Permit:
			if layer == LayerFolder {
				return fmt.Errorf("policy: %s:%d: %w; this permit (%s) was refused and nothing is committed until it goes (put permits in %s)",
					file, line, ErrFolderPermit, r.ID, "$KULE_HOME/policy.cedar")
			}
			r.Effect = "permit"
			e.permits[id] = p
		default:
			r.Effect = "forbid"
			switch v := string(ann["verdict"]); v {
			case "ask":
				r.Verdict = Ask
			case "deny", "":
				// A forbid that does not say is what Cedar says: deny.
				r.Verdict = Deny
			default:
				return fmt.Errorf("policy: %s:%d: @verdict(%q) is neither \"ask\" nor \"deny\": %w", file, line, v, ErrPolicy)
			}
			switch v := string(ann["remember"]); v {
			case "never":
			case "":
				r.Remember = r.Verdict == Ask && layer != LayerFolder
			default:
				return fmt.Errorf("policy: %s:%d: @remember(%q) is not \"never\": %w", file, line, v, ErrPolicy)
			}
			e.forbids[id] = p
		}
		e.meta[id] = r
		e.rules = append(e.rules, r)
	}
	return nil
}

// ruleIDs returns the sorted, distinct ids of the given policies.
func (e *Engine) ruleIDs(ids []cedar.PolicyID, pick func(*Rule) string) []string {
	var out []string
	for _, id := range ids {
		if m := e.meta[id]; m != nil {
			out = append(out, pick(m))
		}
	}
	sort.Strings(out)
	return compact(out)
}

func compact(s []string) []string {
	if len(s) < 2 {
		return s
	}
	out := s[:1]
	for _, x := range s[1:] {
		if x != out[len(out)-1] {
			out = append(out, x)
		}
	}
	return out
}
