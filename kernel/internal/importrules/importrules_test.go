package importrules

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/kulehq/kule"

// rule forbids packages under From to depend on packages under any of Deny
// (or, with OnlyAllow, on any package of the module outside OnlyAllow).
type rule struct {
	From      string
	Deny      []string
	OnlyAllow []string
}

var rules = []rule{
	{From: "kernel", Deny: []string{"plugins", "extensions"}},
	{From: "sdk", Deny: []string{"kernel", "plugins", "extensions", "cmd"}},
	{From: "plugins", Deny: []string{"kernel", "extensions", "cmd"}},
	{From: "contrib/example-differ", OnlyAllow: []string{"sdk", "contrib/example-differ"}},
}

// clients is the rule for everything outside kernel/ (the CLI, the daemon
// and its app in cmd/internal/daemon, transports, extensions): of the
// kernel it imports only the API, package kernel. Every other package under kernel/ is the
// kernel's own: Go's internal rule stops an import of kernel/internal/...,
// and this rule also names a public kernel subpackage that would let a
// client around the API.
var clients = struct {
	Outside string   // the rule holds for packages not under this dir
	Allow   []string // of Outside, only these (exact paths)...
	AllowIn []string // ...and these dirs with what lies below them
}{
	Outside: "kernel",
	Allow:   []string{"kernel"},
	// agentrun is built on *kernel.Kernel, so package kernel cannot name
	// it (an import cycle); clients start agent runs through it until it
	// is part of the kernel.
	AllowIn: []string{"kernel/agentrun"},
}

type pkg struct {
	ImportPath   string
	Imports      []string
	Deps         []string
	TestImports  []string
	XTestImports []string
}

// under reports whether import path p is the module's dir or below it.
func under(p, dir string) bool {
	full := module + "/" + dir
	return p == full || strings.HasPrefix(p, full+"/")
}

// violations lists every broken rule among pkgs.
func violations(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		for _, r := range rules {
			if !under(p.ImportPath, r.From) {
				continue
			}
			check := func(dep, how string) {
				if !strings.HasPrefix(dep, module+"/") {
					return
				}
				for _, d := range r.Deny {
					if under(dep, d) {
						out = append(out, fmt.Sprintf("%s %s %s (%s may not depend on %s)", p.ImportPath, how, dep, r.From, d))
					}
				}
				if r.OnlyAllow != nil {
					ok := false
					for _, a := range r.OnlyAllow {
						ok = ok || under(dep, a)
					}
					if !ok {
						out = append(out, fmt.Sprintf("%s %s %s (%s may depend only on %s)", p.ImportPath, how, dep, r.From, strings.Join(r.OnlyAllow, ", ")))
					}
				}
			}
			for _, d := range p.Deps {
				check(d, "depends on")
			}
			for _, d := range append(p.TestImports, p.XTestImports...) {
				check(d, "imports in its tests")
			}
		}
	}
	out = append(out, clientViolations(pkgs)...)
	sort.Strings(out)
	return out
}

// clientViolations lists every import by a package outside kernel/ of a
// kernel package that is not the API. Direct imports only: the API itself
// depends on the kernel's own packages.
func clientViolations(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		if under(p.ImportPath, clients.Outside) {
			continue
		}
		check := func(imp, how string) {
			if !under(imp, clients.Outside) {
				return
			}
			for _, a := range clients.Allow {
				if imp == module+"/"+a {
					return
				}
			}
			for _, a := range clients.AllowIn {
				if under(imp, a) {
					return
				}
			}
			out = append(out, fmt.Sprintf("%s %s %s (outside %s, import only package %s: the kernel's API names what a client needs)", p.ImportPath, how, imp, clients.Outside, module+"/kernel"))
		}
		for _, d := range p.Imports {
			check(d, "imports")
		}
		for _, d := range append(p.TestImports, p.XTestImports...) {
			check(d, "imports in its tests")
		}
	}
	return out
}

func TestImportRules(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("go is not on PATH")
		}
		t.Skip("go is not on PATH")
	}
	const fields = "ImportPath,Imports,Deps,TestImports,XTestImports"
	pkgs := goList[pkg](t, fields)
	// The example differ is a module of its own, built against the SDK alone;
	// its packages are checked under the name of its directory.
	for _, p := range goListIn[pkg](t, "../../../contrib/example-differ", "./...", fields) {
		p.ImportPath = module + "/contrib/example-differ" + strings.TrimPrefix(p.ImportPath, exampleModule)
		pkgs = append(pkgs, p)
	}
	seen := map[string]bool{}
	for _, p := range pkgs {
		for _, dir := range []string{"kernel", "sdk", "plugins", "contrib/example-differ"} {
			if under(p.ImportPath, dir) {
				seen[dir] = true
			}
		}
	}
	for _, dir := range []string{"kernel", "sdk", "plugins", "contrib/example-differ"} {
		if !seen[dir] {
			t.Errorf("go list found no package under %s: the rules would check nothing", dir)
		}
	}
	for _, v := range violations(pkgs) {
		t.Error(v)
	}
}

// exampleModule is the module path of contrib/example-differ.
const exampleModule = "example.com/kule-ini-differ"

// goList decodes `go list -json=fields` of every package of the module.
func goList[T any](t *testing.T, fields string) []T {
	t.Helper()
	return goListIn[T](t, "../../..", module+"/...", fields)
}

// goListIn decodes `go list -json=fields` of the packages matching pattern,
// run in dir.
func goListIn[T any](t *testing.T, dir, pattern, fields string) []T {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps=false", "-json="+fields, pattern)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list in %s: %v\n%s", dir, err, stderr.String())
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	var pkgs []T
	for {
		var p T
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// TestRulesCanFail: each rule catches a made-up offender.
func TestRulesCanFail(t *testing.T) {
	bad := []pkg{
		{ImportPath: module + "/kernel/review", Deps: []string{module + "/plugins/differ/text"}},
		{ImportPath: module + "/sdk/plugin", Deps: []string{module + "/kernel/task"}},
		{ImportPath: module + "/plugins/differ/go", TestImports: []string{module + "/kernel/pluginhost"}},
		{ImportPath: module + "/contrib/example-differ", Deps: []string{module + "/plugins/builtin"}},
		{ImportPath: module + "/kernel/ok", Deps: []string{module + "/sdk/differ", "fmt"}},
		{ImportPath: module + "/cmd/kule", Imports: []string{module + "/kernel/task"}},
		{ImportPath: module + "/cmd/kule-sandbox", XTestImports: []string{module + "/kernel/internal/sandbox"}},
		{ImportPath: module + "/cmd/ok", Imports: []string{module + "/kernel", module + "/kernel/agentrun", module + "/cmd/internal/daemon", module + "/sdk/differ"}, Deps: []string{module + "/kernel/internal/task"}},
	}
	got := violations(bad)
	// One per offender, and two for the plugin: importing the kernel
	// breaks the plugins' rule and the clients' rule.
	if len(got) != 7 {
		t.Fatalf("violations = %d, want 7 (one per offender, two for the plugin):\n%s", len(got), strings.Join(got, "\n"))
	}
}

// TestClientRuleNamesEachOffender: a client importing a public kernel
// subpackage, or one under kernel/internal, is named with what it imported;
// the API, agentrun and what they pull in are not.
func TestClientRuleNamesEachOffender(t *testing.T) {
	got := clientViolations([]pkg{
		{ImportPath: module + "/cmd/kule", Imports: []string{module + "/kernel", module + "/kernel/policy"}, TestImports: []string{module + "/kernel/task"}},
		{ImportPath: module + "/extensions/host", Imports: []string{module + "/kernel/internal/apply"}},
		{ImportPath: module + "/cmd/kule-sandbox", Imports: []string{module + "/kernel"}, Deps: []string{module + "/kernel/internal/sandbox"}},
		{ImportPath: module + "/kernel/agentrun", Imports: []string{module + "/kernel/internal/task"}},
		{ImportPath: module + "/kernelish", Imports: []string{module + "/kernelish/x"}},
	})
	want := []string{
		module + "/cmd/kule imports " + module + "/kernel/policy",
		module + "/cmd/kule imports in its tests " + module + "/kernel/task",
		module + "/extensions/host imports " + module + "/kernel/internal/apply",
	}
	if len(got) != len(want) {
		t.Fatalf("violations:\n%s\nwant %d, one for each of:\n%s", strings.Join(got, "\n"), len(want), strings.Join(want, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w+" (") {
			t.Errorf("violation %d = %q, want it to start %q", i, got[i], w)
		}
	}
}
