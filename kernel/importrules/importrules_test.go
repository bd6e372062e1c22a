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

type pkg struct {
	ImportPath   string
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
	sort.Strings(out)
	return out
}

func TestImportRules(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("go is not on PATH")
		}
		t.Skip("go is not on PATH")
	}
	const fields = "ImportPath,Deps,TestImports,XTestImports"
	pkgs := goList[pkg](t, fields)
	// The example differ is a module of its own, built against the SDK alone;
	// its packages are checked under the name of its directory.
	for _, p := range goListIn[pkg](t, "../../contrib/example-differ", "./...", fields) {
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
	return goListIn[T](t, "../..", module+"/...", fields)
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
	}
	got := violations(bad)
	if len(got) != 4 {
		t.Fatalf("violations = %d, want 4 (one per offender):\n%s", len(got), strings.Join(got, "\n"))
	}
}
