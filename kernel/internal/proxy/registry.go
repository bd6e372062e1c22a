package proxy

import (
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/kulehq/kule/kernel/internal/proxy/framing"
)

// methodOverrides are the header fields web frameworks read as the request's
// real method: a POST (or GET) carrying "PUT" in one of them is a publish to
// a server that honours it.
var methodOverrides = []string{"X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override", "X-Original-Method"}

// registryRefusal says why a request to a registry is refused, "" if it is
// not. A registry is read-only to commands, and judged by what a request
// asks for, not only by its method: no method override in any form, a
// read-only POST only with a JSON body, and a Go module proxy or checksum
// database path only when it names a module as the go command would (see
// goPathRefusal).
func (p *Proxy) registryRefusal(host string, req *framing.Request, target string) string {
	r, ok := p.registry[host]
	if !ok {
		return ""
	}
	path, query, _ := strings.Cut(target, "?")
	if p.on(guardMethodOverride) {
		for _, name := range methodOverrides {
			if _, ok := req.Header.Get(name); ok {
				return "method override (" + name + ")"
			}
		}
		// ParseQuery decodes what it can (a %5F in a key too) and reports
		// the first part it could not; the raw text is looked at as well.
		if q, _ := url.ParseQuery(query); q.Has("_method") || strings.Contains(strings.ToLower(query), "_method=") {
			return "method override (_method)"
		}
	}
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	case http.MethodPost:
		if !readOnlyPost(r, path) {
			return "publish"
		}
		if p.on(guardMethodOverride) {
			// A form body is where frameworks look for _method; a
			// read-only POST (an audit, a search) sends JSON.
			ct, _ := req.Header.Get("Content-Type")
			if mt, _, err := mime.ParseMediaType(ct); ct != "" && (err != nil || mt == "application/x-www-form-urlencoded" || strings.HasPrefix(mt, "multipart/")) {
				return "form body to a read-only endpoint (a method override may hide in it)"
			}
		}
	default:
		return "publish"
	}
	if p.on(guardRegistryShape) {
		if reason := goPathRefusal(path); reason != "" {
			return reason
		}
	}
	return ""
}

func readOnlyPost(r Registry, path string) bool {
	for _, pre := range r.ReadOnlyPosts {
		if strings.HasPrefix(path, pre) {
			return true
		}
	}
	return false
}

// goPathRefusal judges a path of the Go module proxy protocol
// (/<module>/@v/list, /<module>/@v/<version>.info|.mod|.zip,
// /<module>/@latest) or of the checksum database's (/lookup/<module>@<version>,
// optionally under /sumdb/<db>/). A module proxy fetches a module it does not
// hold from the host its path names, so a path is a way to send data to
// any host: it must be a module path the go command could ask for (see
// checkModulePath) and a version of the shape versions have. Paths of
// other shapes are left alone: no other registry fetches from a host a
// request names.
func goPathRefusal(path string) string {
	p := path
	if rest, ok := strings.CutPrefix(p, "/sumdb/"); ok {
		// /sumdb/<db>/... : the checksum database reached through a proxy.
		db, tail, _ := strings.Cut(rest, "/")
		if msg := checkModulePath(db); msg != "" {
			return "module proxy path: checksum database name " + msg
		}
		p = "/" + tail
	}
	var mod, version string
	switch {
	case strings.HasPrefix(p, "/lookup/"):
		m, v, ok := strings.Cut(strings.TrimPrefix(p, "/lookup/"), "@")
		if !ok {
			return "module proxy path: a lookup names module@version"
		}
		mod, version = m, v
	case strings.HasSuffix(p, "/@latest"):
		mod = strings.TrimSuffix(strings.TrimPrefix(p, "/"), "/@latest")
	case strings.Contains(p, "/@v/"):
		i := strings.LastIndex(p, "/@v/")
		mod, version = strings.TrimPrefix(p[:i], "/"), p[i+len("/@v/"):]
		if version != "list" {
			v, ok := cutAny(version, ".info", ".mod", ".zip")
			if !ok {
				return "module proxy path: @v/ asks for list, .info, .mod or .zip"
			}
			version = v
		} else {
			version = ""
		}
	default:
		return ""
	}
	if msg := checkModulePath(mod); msg != "" {
		return "module proxy path: " + msg
	}
	if version != "" {
		if msg := checkVersion(version); msg != "" {
			return "module proxy path: " + msg
		}
	}
	return ""
}

func cutAny(s string, suffixes ...string) (string, bool) {
	for _, suf := range suffixes {
		if v, ok := strings.CutSuffix(s, suf); ok {
			return v, true
		}
	}
	return s, false
}

// Bounds of a module path: Go's own rules (golang.org/x/mod/module's
// CheckPath, in the proxy's case-escaped form) and, beyond them, what names
// are like: no element longer than maxElement, and no run of
// maxDataRun letters and digits without a separator (hex, base32 and base64
// look like that; names do not). A domain the command controls can still be
// named; these bound what one request can carry to it.
const (
	maxModulePath = 200
	maxElement    = 64
	maxDataRun    = 32
	maxVersion    = 80
)

// checkModulePath returns what is wrong with the module path m (in the
// module proxy's escaped form: upper case as '!' and the lower-case
// letter), "" when it is a module path the go command could ask for.
func checkModulePath(m string) string {
	q := "\"" + clip(m) + "\""
	if m == "" || len(m) > maxModulePath {
		return q + " is not a module path (empty or longer than " + strconv.Itoa(maxModulePath) + ")"
	}
	elems := strings.Split(m, "/")
	for i, e := range elems {
		if e == "" || e == "." || e == ".." || strings.HasSuffix(e, ".") || strings.HasPrefix(e, ".") || len(e) > maxElement {
			return q + " has an element that no module path has"
		}
		for j := 0; j < len(e); j++ {
			c := e[j]
			ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' || i > 0 && c == '+'
			if c == '!' && j+1 < len(e) && e[j+1] >= 'a' && e[j+1] <= 'z' {
				ok = true
			}
			if !ok {
				return q + " holds a character no module path holds"
			}
		}
		if run := longestRun(e); run >= maxDataRun {
			return q + " has a run of " + strconv.Itoa(run) + " letters and digits: it looks like data, not a name"
		}
	}
	host := elems[0]
	if !strings.Contains(host, ".") || strings.HasPrefix(host, "-") || strings.ContainsAny(host, "_~!") {
		return q + " does not start with a domain name"
	}
	labels := strings.Split(host, ".")
	tld := labels[len(labels)-1]
	if len(tld) < 2 || strings.Trim(tld, "abcdefghijklmnopqrstuvwxyz") != "" {
		return q + " does not start with a domain name (an address or an unknown top-level domain)"
	}
	for _, l := range labels {
		if l == "" || strings.HasPrefix(l, "-") || strings.HasSuffix(l, "-") {
			return q + " does not start with a domain name"
		}
	}
	return ""
}

// checkVersion returns what is wrong with a version as the go command sends
// it: a semantic version (v1.2.3, a pre-release, a pseudo-version,
// +incompatible), or a query it resolves through .info (a branch, a tag, a
// commit hash), escaped as module paths are.
func checkVersion(v string) string {
	q := "version \"" + clip(v) + "\""
	if v == "" || len(v) > maxVersion {
		return q + " is empty or too long"
	}
	for j := 0; j < len(v); j++ {
		c := v[j]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '+' || c == '!' || c == '~') {
			return q + " holds a character no version holds"
		}
	}
	return ""
}

// longestRun is the length of the longest run of ASCII letters and digits
// in s.
func longestRun(s string) int {
	best, n := 0, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}
