package depaware

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The checks of TestDeps, shown failing on planted lists.

// A refreshed list that names forbidden packages still fails: the
// forbidden check reads the packages, not the list's say-so.
func TestForbiddenCatchesPlanted(t *testing.T) {
	b, err := os.ReadFile("testdata/planted-forbidden.deps")
	if err != nil {
		t.Fatal(err)
	}
	deps, err := parseList(b)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range forbiddenIn(deps) {
		got = append(got, strings.Fields(line)[0])
	}
	want := []string{
		"github.com/ProtonMail/go-crypto/openpgp",
		"github.com/chromedp/chromedp",
		"github.com/go-git/go-git/v5",
		"github.com/go-git/go-git/v5/plumbing/object",
		"github.com/go-git/go-git/v5/plumbing/transport",
		"github.com/go-git/go-git/v5/plumbing/transport/ssh",
		"github.com/kevinburke/ssh_config",
		"github.com/skeema/knownhosts",
		"github.com/xanzy/ssh-agent",
		"golang.org/x/crypto/ssh",
		"golang.org/x/crypto/ssh/knownhosts",
		"net/http/pprof",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("forbidden packages found in the planted list (-want +got):\n%s", diff)
	}
	for _, line := range forbiddenIn(deps) {
		if !strings.Contains(line, "forbidden by ") || !strings.Contains(line, ": ") {
			t.Errorf("a forbidden line gives no pattern and reason: %q", line)
		}
	}
}

// What the binary may link passes: go-git's plumbing, golang.org/x/crypto
// outside ssh, look-alike names.
func TestForbiddenAllowsNeighbours(t *testing.T) {
	ok := []string{
		"github.com/go-git/go-git/v5/plumbing",
		"github.com/go-git/go-git/v5/plumbing/format/index",
		"github.com/go-git/go-git/v5/plumbing/objectx",
		"github.com/go-git/go-git/v5/storage/filesystem",
		"github.com/go-git/go-git/v5/utils/merkletrie",
		"golang.org/x/crypto/sha3",
		"golang.org/x/crypto/sshx",
		"github.com/ProtonMail/go-cryptox",
		"net/http",
		"github.com/kulehq/kule/plugins/differ/rust",
		"github.com/tree-sitter/go-tree-sitter",
	}
	if bad := forbiddenIn(ok); len(bad) > 0 {
		t.Errorf("allowed packages reported forbidden:\n%s", strings.Join(bad, "\n"))
	}
}

// A list with a line the binary does not have (planted) fails with that
// exact line to remove and the command that refreshes the list.
func TestStaleListReportsExactLines(t *testing.T) {
	real := []string{"example.com/a", "example.com/b", "github.com/kulehq/kule/cmd/kule"}
	list := []string{"example.com/a", "example.com/b", "example.com/planted", "github.com/kulehq/kule/cmd/kule"}
	add, remove := difference(list, real)
	if len(add) != 0 || !cmp.Equal(remove, []string{"example.com/planted"}) {
		t.Fatalf("difference = add %v remove %v, want remove [example.com/planted]", add, remove)
	}
	msg := staleReport(add, remove)
	for _, want := range []string{"\n-example.com/planted\n", refresh} {
		if !strings.Contains(msg, want) {
			t.Errorf("report lacks %q:\n%s", want, msg)
		}
	}
	// And a package the list lacks is a line to add.
	add, remove = difference(real[:2], real)
	if !cmp.Equal(add, []string{"github.com/kulehq/kule/cmd/kule"}) || len(remove) != 0 {
		t.Fatalf("difference = add %v remove %v, want add [github.com/kulehq/kule/cmd/kule]", add, remove)
	}
	if msg := staleReport(add, remove); !strings.Contains(msg, "\n+github.com/kulehq/kule/cmd/kule\n") {
		t.Errorf("report lacks the line to add:\n%s", msg)
	}
}

// The checked-in list, with a planted extra line, no longer matches what
// go list reports: the same comparison TestDeps makes.
func TestPlantedLineInRealList(t *testing.T) {
	_, outside := goList(t)
	b, err := os.ReadFile(listFile)
	if err != nil {
		t.Fatal(err)
	}
	list, err := parseList(append(b, "zz.example/planted\n"...))
	if err != nil {
		t.Fatal(err)
	}
	add, remove := difference(list, outside)
	if len(add) != 0 || !cmp.Equal(remove, []string{"zz.example/planted"}) {
		t.Fatalf("with a planted line: add %v remove %v, want remove the planted line", add, remove)
	}
}

func TestParseListRefuses(t *testing.T) {
	for name, in := range map[string]string{
		"unsorted":    "b\na\n",
		"twice":       "a\na\n",
		"two on one":  "a b\n",
		"tab in line": "a\tb\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := parseList([]byte(in)); err == nil {
				t.Fatalf("parseList(%q) = nil error", in)
			}
		})
	}
	got, err := parseList(formatList([]string{"a", "b/c"}))
	if err != nil || !cmp.Equal(got, []string{"a", "b/c"}) {
		t.Fatalf("parseList(formatList) = %v, %v", got, err)
	}
}

func FuzzParseList(f *testing.F) {
	f.Add([]byte("# c\na\nb/c\n\n"))
	f.Add([]byte("b\na\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := parseList(b)
		if err != nil {
			return
		}
		l2, err := parseList(formatList(l))
		if err != nil || !cmp.Equal(l, l2, cmpEmpty) {
			t.Fatalf("round trip: %v %v, %v", l, l2, err)
		}
	})
}

var cmpEmpty = cmp.Comparer(func(a, b []string) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return cmp.Equal(a, b)
})
