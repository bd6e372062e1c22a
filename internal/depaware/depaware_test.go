package depaware

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite kule.deps from `go list -deps ./cmd/kule`")

// binary is the package whose dependencies kule.deps lists.
const binary = "github.com/kulehq/kule/cmd/kule"

// pluginsBinary serves the built-in plugins beside kule; it is held to the
// forbidden list too (its libraries are its own: no list file).
const pluginsBinary = "github.com/kulehq/kule/cmd/kule-plugins"

// listFile is the checked-in list, one import path a line, sorted.
const listFile = "kule.deps"

// refresh is what a person runs to bring the list up to date.
const refresh = "go test ./internal/depaware -update"

// forbidden are import paths the trusted binary must not link, each with
// the reason; a pattern ending in "/..." matches the path and everything
// below it. They are checked against every dependency, the standard
// library included, whatever kule.deps says.
var forbidden = []struct{ pattern, why string }{
	{"github.com/go-git/go-git/v5", "go-git's root package links every transport: use its plumbing packages"},
	{"github.com/go-git/go-git/v5/plumbing/transport/...", "Kule never fetches or pushes: no git transport in the binary"},
	{"github.com/go-git/go-git/v5/plumbing/object", "it links OpenPGP for signature checks Kule never makes: gitstate decodes the objects it reads"},
	{"golang.org/x/crypto/ssh/...", "no SSH client or key handling in the binary"},
	{"github.com/skeema/knownhosts", "SSH known-hosts handling"},
	{"github.com/kevinburke/ssh_config", "SSH client configuration"},
	{"github.com/xanzy/ssh-agent", "SSH agent client"},
	{"github.com/ProtonMail/go-crypto/...", "OpenPGP: no signature checks or keys in the binary"},
	{"net/http/pprof", "profiling handlers on the daemon's server: never in a release"},
	{"github.com/chromedp/...", "the browser driver of the app's tests: tests only"},
}

// matches reports whether path is pattern or, for a pattern ending in
// "/...", anything at or below its prefix.
func matches(pattern, path string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == prefix || strings.HasPrefix(path, prefix+"/")
	}
	return path == pattern
}

// forbiddenIn lists, one line each, the packages of deps that a forbidden
// pattern matches, with the reason.
func forbiddenIn(deps []string) []string {
	var out []string
	for _, d := range deps {
		for _, f := range forbidden {
			if matches(f.pattern, d) {
				out = append(out, fmt.Sprintf("%s (forbidden by %s: %s)", d, f.pattern, f.why))
				break
			}
		}
	}
	return out
}

// difference is what must be added to and removed from list to make it
// real; both are sorted.
func difference(list, real []string) (add, remove []string) {
	in := func(s []string) map[string]bool {
		m := make(map[string]bool, len(s))
		for _, x := range s {
			m[x] = true
		}
		return m
	}
	inList, inReal := in(list), in(real)
	for _, r := range real {
		if !inList[r] {
			add = append(add, r)
		}
	}
	for _, l := range list {
		if !inReal[l] {
			remove = append(remove, l)
		}
	}
	slices.Sort(add)
	slices.Sort(remove)
	return slices.Compact(add), slices.Compact(remove)
}

// staleReport is the failure text for a list that differs from the real
// dependencies: the exact lines, and how to refresh.
func staleReport(add, remove []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s does not match the dependencies of %s (%d to add, %d to remove):\n", listFile, binary, len(add), len(remove))
	for _, a := range add {
		fmt.Fprintf(&b, "+%s\n", a)
	}
	for _, r := range remove {
		fmt.Fprintf(&b, "-%s\n", r)
	}
	fmt.Fprintf(&b, "If the change is meant (a package moved, a dependency was added or dropped on purpose), refresh the list with\n\t%s\nand commit it with the change; a merge of branches that moved packages needs the same refresh.", refresh)
	return b.String()
}

// parseList reads a list file: one import path a line; blank lines and
// lines starting with # are ignored. It refuses a list that is not sorted
// or names a package twice, so that a hand edit cannot hide a line.
func parseList(b []byte) ([]string, error) {
	var out []string
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.ContainsAny(line, " \t") {
			return nil, fmt.Errorf("line %d: %q is not one import path", i+1, line)
		}
		if n := len(out); n > 0 && out[n-1] >= line {
			return nil, fmt.Errorf("line %d: %q is not after %q: the list must be sorted, each package once (%s rewrites it)", i+1, line, out[n-1], refresh)
		}
		out = append(out, line)
	}
	return out, nil
}

// formatList is the file content for deps.
func formatList(deps []string) []byte {
	var b bytes.Buffer
	b.WriteString("# The packages outside the standard library that the kule binary is built\n")
	b.WriteString("# from (linux/amd64, cgo on). Refresh: " + refresh + "\n")
	for _, d := range deps {
		b.WriteString(d + "\n")
	}
	return b.Bytes()
}

// goList runs `go list -deps` on the binary for the platform Kule ships
// on, and returns every package (standard library included) and those
// outside it, each sorted.
func goList(t *testing.T) (all, outside []string) { return goListOf(t, binary) }

func goListOf(t *testing.T, binary string) (all, outside []string) {
	t.Helper()
	const format = `{{if .Standard}}std{{else if and .Module .Module.Main}}own{{else}}dep{{end}} {{.ImportPath}} {{.Dir}}`
	cmd := exec.Command("go", "list", "-deps", "-f", format, binary)
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", binary, err, stderr.Bytes())
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		kind, rest, _ := strings.Cut(line, " ")
		path, dir, _ := strings.Cut(rest, " ")
		all = append(all, path)
		if kind == "std" {
			continue
		}
		outside = append(outside, path)
		if kind == "own" {
			noteInputs(t, dir)
		}
	}
	noteInputs(t, "../..", "go.mod", "go.sum")
	slices.Sort(all)
	slices.Sort(outside)
	return all, outside
}

// noteInputs reads dir and stats its Go files (or the files named), so
// that go test's cache, which keys a result on the files a test looked at,
// runs this test again once the binary's sources or go.mod change: the
// packages `go list` reads are not otherwise known to it.
func noteInputs(t *testing.T, dir string, names ...string) {
	t.Helper()
	if len(names) == 0 {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatalf("read %s: %v", dir, err)
		}
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".go") {
				names = append(names, e.Name())
			}
		}
	}
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Fatalf("stat %s: %v", filepath.Join(dir, n), err)
		}
	}
}

// TestDeps checks kule.deps against the binary's real dependencies, and
// the real dependencies against the forbidden list.
func TestDeps(t *testing.T) {
	all, outside := goList(t)
	if len(outside) == 0 {
		t.Fatalf("go list -deps %s found no package outside the standard library, not even the binary itself", binary)
	}
	if bad := forbiddenIn(all); len(bad) > 0 {
		t.Errorf("the kule binary links packages it must not:\n\t%s\nFind who imports one with `go list -deps -f '{{.ImportPath}}: {{.Imports}}' ./cmd/kule | grep PACKAGE`; refreshing %s does not make this pass.",
			strings.Join(bad, "\n\t"), listFile)
	}
	if *update {
		if err := os.WriteFile(listFile, formatList(outside), 0o644); err != nil {
			t.Fatalf("write %s: %v", listFile, err)
		}
		t.Logf("wrote %s: %d packages", listFile, len(outside))
		return
	}
	b, err := os.ReadFile(listFile)
	if err != nil {
		t.Fatalf("read %s: %v (make it with %s)", listFile, err, refresh)
	}
	list, err := parseList(b)
	if err != nil {
		t.Fatalf("%s: %v", listFile, err)
	}
	if add, remove := difference(list, outside); len(add)+len(remove) > 0 {
		t.Error(staleReport(add, remove))
	}
}

// TestPluginsBinaryDeps: kule-plugins, which the kernel starts for every
// built-in plugin, links nothing the forbidden list names either.
func TestPluginsBinaryDeps(t *testing.T) {
	all, _ := goListOf(t, pluginsBinary)
	if bad := forbiddenIn(all); len(bad) > 0 {
		t.Errorf("the kule-plugins binary links packages it must not:\n\t%s", strings.Join(bad, "\n\t"))
	}
	if !slices.Contains(all, "github.com/xuri/excelize/v2") {
		t.Error("kule-plugins does not link the spreadsheet previewer's library: is it serving the previewers?")
	}
}

// TestKuleLeavesThePluginsLibraries: the kule binary links none of the
// libraries only the built-in plugins use; they are kule-plugins' (each
// costs every kule command its start-up).
func TestKuleLeavesThePluginsLibraries(t *testing.T) {
	all, _ := goList(t)
	for _, lib := range []string{"github.com/xuri/excelize/v2", "github.com/yuin/goldmark", "github.com/dop251/goja", "github.com/slack-go/slack", "github.com/bwmarrin/discordgo", "github.com/tree-sitter/go-tree-sitter"} {
		if slices.Contains(all, lib) {
			t.Errorf("kule links %s, which only the built-in plugins need (kule-plugins serves them)", lib)
		}
	}
}
