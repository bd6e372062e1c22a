package daemon

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"
)

// peerListener accepts only connections from a process of the daemon's own
// user (SO_PEERCRED); others are closed at once.
type peerListener struct {
	net.Listener
	uid int
	log hclog.Logger
}

type viaSocketKey struct{}

func (l *peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		uid, err := peerUID(c)
		if err == nil && uid == l.uid {
			return c, nil
		}
		l.log.Warn("socket peer refused", "uid", uid, "err", err)
		c.Close()
	}
}

// peerUID reads the uid of the process at the other end of a unix socket.
func peerUID(c net.Conn) (int, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return -1, ErrNotOwner
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return -1, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return -1, err
	}
	if cerr != nil {
		return -1, cerr
	}
	return int(cred.Uid), nil
}

// socketOnly marks requests that came over the socket (their peer was
// checked), which may use the socket-only endpoints.
func (d *Daemon) socketOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), viaSocketKey{}, true)))
	})
}

func viaSocket(r *http.Request) bool { v, _ := r.Context().Value(viaSocketKey{}).(bool); return v }

const cookieName = "kule_token"

// launchTTL is how long a launch code opens the app. The code goes into
// xdg-open's arguments, which every local user can read: it opens the app
// once, within this time, and is never the session's secret.
const launchTTL = 60 * time.Second

// launchOnce spends a launch code at its first use. Tests turn it off to
// show what it guards.
var launchOnce = true

// launches holds the launch codes not yet used, with when each expires.
type launches struct {
	mu    sync.Mutex
	codes map[string]time.Time
	now   func() time.Time // time.Now; tests move it
}

// mint makes a new launch code, valid for launchTTL, and drops expired ones.
func (l *launches) mint() string {
	code := rand.Text()
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock()
	for c, exp := range l.codes {
		if !now.Before(exp) {
			delete(l.codes, c)
		}
	}
	if l.codes == nil {
		l.codes = map[string]time.Time{}
	}
	l.codes[code] = now.Add(launchTTL)
	return code
}

// redeem reports whether code is a launch code still valid, and spends it.
func (l *launches) redeem(code string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	ok := false
	for c, exp := range l.codes {
		if subtle.ConstantTimeCompare([]byte(c), []byte(code)) == 1 && l.clock().Before(exp) {
			ok = true
		}
	}
	if launchOnce || !ok {
		delete(l.codes, code)
	}
	return ok && code != ""
}

func (l *launches) clock() time.Time {
	if l.now != nil {
		return l.now()
	}
	return time.Now()
}

// guard lets a request through the HTTP port only when its Host is the
// daemon's own loopback address, its Origin (when sent) is this very
// origin, the browser does not say it came from another site, and it
// carries the session token — in the cookie, or an Authorization: Bearer
// header. `/?launch=CODE` (the address `kule app` opens) exchanges a
// one-time launch code for the cookie and sends the browser on to `/`.
func (d *Daemon) guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		port := d.httpL.Addr().(*net.TCPAddr).Port
		if !d.hostOK(r.Host, port) {
			http.Error(w, "refused: the Host header is not this daemon's loopback address", http.StatusMisdirectedRequest)
			return
		}
		if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/ext-panel/") {
			// An extension panel's files: the sandboxed frame has an opaque
			// origin and sends neither cookie nor a same-origin fetch site;
			// the key in the path is the capability (extensions.go).
			h.ServeHTTP(w, r)
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !d.originOK(o, port) {
			http.Error(w, "refused: a request from another origin", http.StatusForbidden)
			return
		}
		if s := r.Header.Get("Sec-Fetch-Site"); s == "cross-site" || s == "same-site" {
			http.Error(w, "refused: a request from another site", http.StatusForbidden)
			return
		}
		if r.URL.Path == "/" && r.URL.Query().Has("launch") {
			w.Header().Set("Cache-Control", "no-store")
			if !d.launch.redeem(r.URL.Query().Get("launch")) {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				w.WriteHeader(http.StatusUnauthorized)
				w.Write([]byte(spentPage))
				return
			}
			http.SetCookie(w, &http.Cookie{Name: cookieName, Value: d.token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			http.Redirect(w, r, "/", http.StatusSeeOther)
			return
		}
		tok := ""
		if c, err := r.Cookie(cookieName); err == nil {
			tok = c.Value
		}
		if a := r.Header.Get("Authorization"); strings.HasPrefix(a, "Bearer ") {
			tok = strings.TrimPrefix(a, "Bearer ")
		}
		if !d.tokenOK(tok) {
			if r.URL.Path == "/" || !strings.HasPrefix(r.URL.Path, "/api/") {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				w.WriteHeader(http.StatusUnauthorized)
				w.Write([]byte(lockedPage))
				return
			}
			http.Error(w, "refused: not logged in (run `kule app` to open the app; nothing was changed)", http.StatusUnauthorized)
			return
		}
		// A change must come as JSON: a form or a no-cors fetch from another
		// page cannot send that content type without a CORS preflight.
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			http.Error(w, "refused: a change must be sent as application/json", http.StatusUnsupportedMediaType)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func (d *Daemon) tokenOK(t string) bool {
	return t != "" && subtle.ConstantTimeCompare([]byte(t), []byte(d.token)) == 1
}

// hostOK accepts only the address the port listens on, by its IP: a
// name (localhost) would put the cookie on a host every local server
// shares.
func (d *Daemon) hostOK(host string, port int) bool {
	h, p, err := net.SplitHostPort(host)
	if err != nil || p != itoa(port) {
		return false
	}
	return h == d.httpL.Addr().(*net.TCPAddr).IP.String()
}

func (d *Daemon) originOK(origin string, port int) bool {
	rest, ok := strings.CutPrefix(origin, "http://")
	return ok && d.hostOK(rest, port)
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

const lockedPage = `<!doctype html><html lang="en"><meta charset="utf-8"><title>Kule — locked</title>
<body style="font:16px system-ui;margin:4rem;max-width:40rem">
<h1>Kule is locked</h1><p>This address needs the token of this daemon's start.
Run <code>kule app</code> (or <code>kule app --print-url</code>) in a terminal and open the address it gives.</p></body></html>`

const spentPage = `<!doctype html><html lang="en"><meta charset="utf-8"><title>Kule — address used</title>
<body style="font:16px system-ui;margin:4rem;max-width:40rem">
<h1>This address was used already, or has expired</h1><p>An address from <code>kule app</code> opens the
control room once, within a minute, and nothing else. Nobody was let in with it now.
Run <code>kule app</code> again for a new one. If you did not open this address yourself before, someone
else may have: stop the daemon (<code>kill</code> the pid in <code>kuled.lock</code>) and start it again.</p></body></html>`
