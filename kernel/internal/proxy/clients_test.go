package proxy

import (
	"fmt"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func runTool(t *testing.T, w *world, dir string, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(need(t, name), args...)
	cmd.Env = w.env()
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestPython(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.start(t)
	ph := w.placeholder()
	script := `
import os, urllib.request, urllib.error
ph = os.environ["STRIPE_KEY"]
req = urllib.request.Request("https://api.example.test/py?key=" + ph, data=("key=" + ph).encode(),
      headers={"Authorization": "Bearer " + ph, "X-Note": ph})
print(urllib.request.urlopen(req).read().decode())
try:
    urllib.request.urlopen(urllib.request.Request("https://api.example.test/foreign", headers={"Authorization": "Bearer sk_live_found"}))
    print("foreign=passed")
except urllib.error.HTTPError as e:
    print("foreign=%d" % e.code)
`
	out, err := runTool(t, w, w.dir, "python3", "-c", script)
	if err != nil {
		t.Fatalf("python3: %v\n%s", err, out)
	}
	checkInjected(t, lastTo(t, w, "/py"), ph)
	checkBlanked(t, out)
	if !strings.Contains(out, "foreign=403") {
		t.Errorf("foreign credential from python: %s", out)
	}
}

func TestNode(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.start(t)
	ph := w.placeholder()
	// Node 20's https does not read HTTPS_PROXY; the script opens the tunnel
	// itself with CONNECT, as proxy-agent libraries do. NODE_EXTRA_CA_CERTS
	// carries the run authority.
	script := `
const http = require('http'), https = require('https'), tls = require('tls');
const ph = process.env.STRIPE_KEY;
const pu = new URL(process.env.HTTPS_PROXY);
const req = http.request({host: pu.hostname, port: pu.port, method: 'CONNECT', path: 'api.example.test:443',
  headers: {'Proxy-Authorization': 'Basic ' + Buffer.from(decodeURIComponent(pu.username) + ':' + decodeURIComponent(pu.password)).toString('base64')}});
req.on('connect', (res, socket) => {
  if (res.statusCode !== 200) { console.log('CONNECT ' + res.statusCode); process.exit(1); }
  const agent = new https.Agent({maxSockets: 1});
  agent.createConnection = () => tls.connect({socket, servername: 'api.example.test', ALPNProtocols: ['h2', 'http/1.1']});
  const r = https.request({host: 'api.example.test', path: '/node?key=' + ph, method: 'POST',
      agent, headers: {Authorization: 'Bearer ' + ph, 'X-Note': ph}},
    (res) => { let d = ''; res.on('data', c => d += c); res.on('end', () => { console.log(d); socket.destroy(); }); });
  r.on('error', e => { console.log('error ' + e); process.exit(1); });
  r.end('key=' + ph);
});
req.on('error', e => { console.log('error ' + e); process.exit(1); });
req.end();
`
	out, err := runTool(t, w, w.dir, "node", "-e", script)
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	checkInjected(t, lastTo(t, w, "/node"), ph)
	checkBlanked(t, out)
}

func TestGitOverHTTPS(t *testing.T) {
	t.Parallel()
	git := need(t, "git")
	w := newWorld(t)
	w.secret.Hosts = append(w.secret.Hosts, gitHost)
	// A real repository served by git's own smart-HTTP backend.
	root := filepath.Join(w.dir, "srv")
	repo := filepath.Join(root, "repo.git")
	work := filepath.Join(w.dir, "work")
	for _, args := range [][]string{
		{"init", "-q", "--bare", repo},
		{"init", "-q", work},
		{"-C", work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "first"},
		{"-C", work, "push", "-q", repo, "HEAD:refs/heads/main"},
	} {
		if out, err := exec.Command(git, args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	backend := &cgi.Handler{Path: git, Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}}
	w.serve(t, gitHost, true, http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		if _, _, ok := req.BasicAuth(); !ok {
			rw.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			rw.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.rec.add(req)
		backend.ServeHTTP(rw, req)
	}))
	w.start(t)
	ph := w.placeholder()
	out, err := runTool(t, w, w.dir, "git", "ls-remote", fmt.Sprintf("https://x-access-token:%s@%s/repo.git", ph, gitHost))
	if err != nil {
		t.Fatalf("git ls-remote: %v\n%s", err, out)
	}
	if !strings.Contains(out, "refs/heads/main") {
		t.Fatalf("git ls-remote did not list the branch:\n%s", out)
	}
	s := lastTo(t, w, "/repo.git/info/refs")
	if u, p, _ := (&http.Request{Header: s.Header}).BasicAuth(); u != "x-access-token" || p != secretValue {
		t.Errorf("git's Basic credential reached the server as %q:%q", u, p)
	}
	if !strings.Contains(s.URI, "service=git-upload-pack") {
		t.Errorf("unexpected info/refs request %q", s.URI)
	}
	out, err = runTool(t, w, w.dir, "git", "clone", "-q", fmt.Sprintf("https://x-access-token:%s@%s/repo.git", ph, gitHost), "clone")
	if err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(w.dir, "clone", ".git")); err != nil {
		t.Fatalf("clone missing: %v", err)
	}
	// The remote URL kept in the clone holds the placeholder, not the value.
	cfg, _ := os.ReadFile(filepath.Join(w.dir, "clone", ".git", "config"))
	if strings.Contains(string(cfg), secretValue) || !strings.Contains(string(cfg), ph) {
		t.Errorf("the clone's config holds the value or lost the placeholder:\n%s", cfg)
	}
}

func TestRegistryPublishRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.start(t)
	curl := func(args ...string) string {
		out, _ := runTool(t, w, w.dir, "curl", append([]string{"-sS", "-o", "/dev/null", "-w", "%{http_code}"}, args...)...)
		return out
	}
	tests := map[string]struct {
		args []string
		want string
		seen bool
	}{
		"install GET":      {[]string{"https://" + registryHost + "/left-pad"}, "200", true},
		"publish PUT":      {[]string{"-X", "PUT", "-d", "{}", "https://" + registryHost + "/left-pad"}, "403", false},
		"unpublish DELETE": {[]string{"-X", "DELETE", "https://" + registryHost + "/left-pad/-rev/1"}, "403", false},
		"upload POST":      {[]string{"-F", "content=@/dev/null", "https://" + registryHost + "/legacy/"}, "403", false},
		"read-only POST":   {[]string{"-H", "Content-Type: application/json", "-d", "{}", "https://" + registryHost + "/-/audit/quick"}, "200", true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := len(w.rec.all())
			if got := curl(tc.args...); got != tc.want {
				t.Errorf("status %s, want %s", got, tc.want)
			}
			if got := len(w.rec.all()) > before; got != tc.seen {
				t.Errorf("server saw the request: %v, want %v", got, tc.seen)
			}
		})
	}
	// npm itself: publish must be refused before the registry sees a PUT.
	if _, err := exec.LookPath("npm"); err == nil {
		pkg := filepath.Join(w.dir, "pkg")
		os.MkdirAll(pkg, 0o755)
		os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name":"kule-test-pkg","version":"1.0.0"}`), 0o644)
		os.WriteFile(filepath.Join(pkg, ".npmrc"), []byte("//"+registryHost+"/:_authToken=tok\n"), 0o644)
		before := len(w.rec.all())
		out, err := runTool(t, w, pkg, "npm", "publish", "--registry", "https://"+registryHost+"/")
		if err == nil {
			t.Errorf("npm publish passed:\n%s", out)
		}
		if !strings.Contains(out, "403") {
			t.Errorf("npm publish did not meet a 403:\n%s", out)
		}
		for _, s := range w.rec.all()[before:] {
			if s.Method == "PUT" {
				t.Errorf("the registry received npm's PUT %s", s.URI)
			}
		}
	}
}
