package sandbox

import (
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kulehq/kule/kernel/internal/runner"
)

// secretWords mark an environment variable as a secret when a word of its
// name (split at '_') is one of them or ends with one ("GHTOKEN").
var secretWords = []string{
	"TOKEN", "TOKENS", "SECRET", "SECRETS", "PASSWORD", "PASSWD", "PASSPHRASE",
	"CREDENTIAL", "CREDENTIALS", "AUTH", "COOKIE", "APIKEY",
}

// secretPairs mark a name as a secret when it contains them.
var secretPairs = []string{"API_KEY", "ACCESS_KEY", "PRIVATE_KEY", "SESSION_KEY", "SIGNING_KEY", "AUTH_KEY"}

// droppedNames are removed whatever their value: they lead to an agent or a
// bus outside the sandbox, or to credentials.
var droppedNames = map[string]bool{
	"SSH_AUTH_SOCK": true, "SSH_AGENT_PID": true, "GPG_AGENT_INFO": true,
	"DBUS_SESSION_BUS_ADDRESS": true, "DOCKER_HOST": true, "KUBECONFIG": true,
	"XDG_RUNTIME_DIR": true, "KULE_HOME": true,
}

// secretValuePrefixes mark a value as a secret whatever its name.
var secretValuePrefixes = []string{
	"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "xoxb-",
	"xoxp-", "xapp-", "sk-", "AKIA", "ASIA", "npm_", "pypi-", "hf_",
	"-----BEGIN",
}

// proxyNames are the proxy variables every HTTP client reads.
var proxyNames = []string{
	"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
	"all_proxy", "NO_PROXY", "no_proxy",
}

// IsSecretEnv reports whether the environment entry "NAME=value" looks like
// a secret and is kept from commands.
func IsSecretEnv(kv string) bool {
	name, value, _ := strings.Cut(kv, "=")
	if droppedNames[name] {
		return true
	}
	// A placeholder Kule handed out opens nothing: the proxy puts the real
	// value in at its hosts only. An agent's key variable keeps it.
	if strings.HasPrefix(value, "kule-secret-") && !strings.ContainsAny(value, " \n") {
		return false
	}
	up := strings.ToUpper(name)
	for _, part := range secretPairs {
		if strings.Contains(up, part) {
			return true
		}
	}
	for _, w := range strings.Split(up, "_") {
		for _, s := range secretWords {
			if w == s || (len(w) > len(s) && strings.HasSuffix(w, s) && s != "AUTH") {
				return true
			}
		}
	}
	for _, pre := range secretValuePrefixes {
		if strings.HasPrefix(value, pre) && len(value) >= 16 {
			return true
		}
	}
	return false
}

// FilterEnv returns env without the entries that look like secrets, and the
// names it dropped (for the caller to tell the person).
func FilterEnv(env []string) (kept []string, dropped []string) {
	for _, kv := range env {
		if IsSecretEnv(kv) {
			name, _, _ := strings.Cut(kv, "=")
			if !droppedNames[name] { // those are plumbing, not worth a word
				dropped = append(dropped, name)
			}
			continue
		}
		kept = append(kept, kv)
	}
	return kept, dropped
}

// cacheVars point package managers' caches into the task's home layer.
var cacheVars = []struct{ name, sub string }{
	{"CARGO_HOME", "cargo"},
	{"npm_config_cache", "npm"},
	{"PIP_CACHE_DIR", "pip"},
	{"UV_CACHE_DIR", "uv"},
	{"GOCACHE", "go-build"},
	{"GOMODCACHE", "go-mod"},
	{"NUGET_PACKAGES", "nuget"},
	{"YARN_CACHE_FOLDER", "yarn"},
	{"npm_config_store_dir", "pnpm-store"},
	{"XDG_CACHE_HOME", "xdg"},
}

// CacheEnv returns the variables that give a task its own package caches
// in dir (the task's cache directory).
func CacheEnv(dir string) []string {
	out := make([]string, 0, len(cacheVars))
	for _, c := range cacheVars {
		out = append(out, c.name+"="+filepath.Join(dir, c.sub))
	}
	return out
}

// ProxyEnv returns the proxy variables pointing at 127.0.0.1:port, with the
// proxy's per-run token as the URL's password when there is one. NO_PROXY
// is empty: loopback goes through the proxy too. Inside the sandbox the
// only loopback port a command may connect to is the proxy's (Landlock),
// so a loopback address sent around the proxy reached nothing and left no
// trace; through the proxy a local model the person named (Ollama on
// 127.0.0.1:11434, a gateway on localhost:4000) is reached on the host,
// and every other loopback attempt is refused and logged in network.jsonl.
func ProxyEnv(port int, token ...string) []string {
	u := "http://127.0.0.1:" + strconv.Itoa(port)
	if len(token) > 0 && token[0] != "" {
		u = "http://kule:" + url.QueryEscape(token[0]) + "@127.0.0.1:" + strconv.Itoa(port)
	}
	return []string{
		"HTTP_PROXY=" + u, "HTTPS_PROXY=" + u, "ALL_PROXY=" + u,
		"http_proxy=" + u, "https_proxy=" + u, "all_proxy=" + u,
		"NO_PROXY=", "no_proxy=",
	}
}

// commandEnv is the command's environment: the Spec's without secrets, the
// person's proxy settings and cache locations, plus the task's own. A
// variable the task sets (TaskEnv: the CA bundle of the task's proxy in
// SSL_CERT_FILE and its kin) is the task's alone: the person's own value is
// dropped, since a program reading its environment takes the first of two
// (glibc's getenv, Go's os.Getenv), and the person's SSL_CERT_FILE would
// make every intercepted TLS connection fail. The proxy's bundle holds the
// roots of the person's file (kernel/internal/proxy reads it outside the sandbox).
// taskWins false is the guard taken away, for attack tests.
func commandEnv(spec runner.Spec, p *plan, taskWins bool) []string {
	kept, _ := FilterEnv(spec.Env)
	drop := map[string]bool{"TMPDIR": true}
	if taskWins {
		for _, kv := range spec.TaskEnv {
			name, _, _ := strings.Cut(kv, "=")
			drop[name] = true
		}
	}
	for _, c := range cacheVars {
		drop[c.name] = true
	}
	if spec.Network != runner.NetworkOpen {
		for _, n := range proxyNames {
			drop[n] = true
		}
	}
	var env []string
	for _, kv := range kept {
		name, _, _ := strings.Cut(kv, "=")
		if !drop[name] {
			env = append(env, kv)
		}
	}
	env = append(env, "TMPDIR=/tmp")
	env = append(env, CacheEnv(p.Cache)...)
	if gp, ok := goProxyFromCache(spec.Env); ok {
		env = append(withoutVar(env, "GOPROXY"), gp)
	}
	if p.ProxyPort > 0 {
		env = append(env, ProxyEnv(p.ProxyPort, spec.ProxyToken)...)
	}
	return append(env, spec.TaskEnv...)
}

// goProxyFromCache lets Go read the person's module cache (read-only) as a
// proxy before the network, so a task's own GOMODCACHE fills from it instead
// of downloading again.
func goProxyFromCache(env []string) (string, bool) {
	dir := goModCache(env)
	if dir == "" || !filepath.IsAbs(dir) {
		return "", false
	}
	dl := filepath.Join(dir, "cache", "download")
	if fi, err := os.Stat(dl); err != nil || !fi.IsDir() {
		return "", false
	}
	rest := lookupEnv(env, "GOPROXY")
	if rest == "" {
		rest = "https://proxy.golang.org,direct"
	}
	return "GOPROXY=file://" + dl + "," + rest, true
}

// goModCache is the person's Go module cache as env sets it (GOMODCACHE,
// else the first GOPATH's pkg/mod, else ~/go/pkg/mod); "" when none can
// be told.
func goModCache(env []string) string {
	if dir := lookupEnv(env, "GOMODCACHE"); dir != "" {
		return dir
	}
	gopath := lookupEnv(env, "GOPATH")
	if gopath == "" {
		if h := lookupEnv(env, "HOME"); h != "" {
			gopath = filepath.Join(h, "go")
		}
	}
	if first := filepath.SplitList(gopath); len(first) > 0 && first[0] != "" {
		return filepath.Join(first[0], "pkg", "mod")
	}
	return ""
}

func withoutVar(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}
