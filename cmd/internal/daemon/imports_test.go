package daemon

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/kulehq/kule"

// allowedImports are the packages of this module the daemon and its client
// may import: the kernel's API (package kernel), and the daemon's own
// client. Whatever else of kernel/ the daemon needs, package kernel offers
// (kernel/daemon_api.go), so the kernel's packages can move behind
// kernel/internal without the app noticing.
var allowedImports = map[string]string{
	module + "/kernel":                     "the kernel's API",
	module + "/cmd/internal/daemon/client": "the daemon's own socket client",
	module + "/internal/golden":            "the golden tests' normaliser and compare (tests only)",
	// agentrun imports package kernel, so package kernel cannot offer it.
	module + "/kernel/agentrun": "imports package kernel: an agent's turn cannot start through it yet",
	module + "/sdk/transport":   "the transport contract the daemon hosts (chat cockpits)",
	// The extension host served in process, so the daemon's pool of hosts
	// and the app's notes and settings are tested without the sandbox.
	module + "/sdk/extension":   "the extension host's contract (tests only)",
	module + "/extensions/host": "the extension host, in process (tests only)",
}

// forbiddenImports lists, for each Go file in dir (tests included), the
// imports of this module it makes that allowedImports does not name.
func forbiddenImports(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	fset := token.NewFileSet()
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.ImportsOnly)
		if err != nil {
			return nil, err
		}
		for _, im := range f.Imports {
			p, err := strconv.Unquote(im.Path.Value)
			if err != nil {
				return nil, err
			}
			if (p == module || strings.HasPrefix(p, module+"/")) && allowedImports[p] == "" {
				out = append(out, e.Name()+": "+p)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// TestDaemonImportsOnlyTheKernelAPI: the daemon and its client reach the
// kernel through package kernel alone.
func TestDaemonImportsOnlyTheKernelAPI(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{".", "client"} {
		bad, err := forbiddenImports(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bad {
			t.Errorf("%s imports %s; use what package kernel offers (kernel/daemon_api.go), or add it there", dir, b)
		}
	}
}

// TestImportRuleCanFail: the rule finds the imports planted in testdata,
// and only those.
func TestImportRuleCanFail(t *testing.T) {
	t.Parallel()
	got, err := forbiddenImports(filepath.Join("testdata", "imports"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"planted.go: " + module + "/kernel/internal/atomicfile",
		"planted.go: " + module + "/kernel/task",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the rule found %q, want %q", got, want)
	}
}
