package daemon

import (
	"context"
	"crypto/subtle"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"golang.org/x/sys/unix"
)

// peerListener accepts only connections from a process of the daemon's own
// user (SO_PEERCRED); others are closed at once.
type peerListener struct {
	net.Listener
	uid int
	log *slog.Logger
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

// guard lets a request through the HTTP port only when its Host is this
// loopback address, its Origin (when sent) is this very origin, the browser
// does not say it came from another site, and it carries the token — in the
// cookie, or an Authorization: Bearer header. `/?token=…` sets the cookie
// once and sends the browser on to `/` without the token in the address.
func (d *Daemon) guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		port := d.httpL.Addr().(*net.TCPAddr).Port
		if !d.hostOK(r.Host, port) {
			http.Error(w, "refused: the Host header is not this daemon's loopback address", http.StatusMisdirectedRequest)
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
		if r.URL.Path == "/" && r.URL.Query().Has("token") {
			if !d.tokenOK(r.URL.Query().Get("token")) {
				http.Error(w, "refused: a wrong token (open the address `kule app --print-url` prints)", http.StatusUnauthorized)
				return
			}
			http.SetCookie(w, &http.Cookie{Name: cookieName, Value: d.token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			w.Header().Set("Cache-Control", "no-store")
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
			http.Error(w, "refused: no valid token (open the address `kule app --print-url` prints)", http.StatusUnauthorized)
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

func (d *Daemon) hostOK(host string, port int) bool {
	h, p, err := net.SplitHostPort(host)
	if err != nil || p != itoa(port) {
		return false
	}
	return h == "127.0.0.1" || h == "localhost" || h == "[::1]" || h == "::1"
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
