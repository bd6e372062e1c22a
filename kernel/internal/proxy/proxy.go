// Package proxy is a task's HTTP/1.1 forward proxy: the only way out of the
// sandbox. It tunnels CONNECT and forwards plain HTTP, asks a Decider about
// every connection, logs each one to the task's network.jsonl, and looks
// inside TLS for two kinds of host only:
//
//   - a secret's hosts, to put the secret's value in place of its placeholder
//     in credential headers, refuse credentials Kule does not hold for that
//     host, and blank the value out of responses;
//   - package registries, to refuse publishing (any method but GET, HEAD and
//     OPTIONS, save POSTs the registry marks read-only).
//
// For that it makes a certificate authority of its own for each run, whose key
// never leaves memory and whose X.509 name constraints permit only those hosts.
// Requests it reads are framed strictly (package framing); every other
// connection is a byte-for-byte tunnel.
//
// Lifecycle:
//  1. Start(ctx, cfg) listens on 127.0.0.1:0, makes the authority and writes
//     the CA bundle (system roots + the authority) when a host is intercepted.
//     Begin only listens; Ready makes the authority (kule exec calls it once
//     the sandbox's helper is forked).
//  2. The runner gives the command Env() (proxy variables, CA bundle
//     variables, secret placeholders).
//  3. After the command, Summary() gives the CLI's lines.
//  4. Close() stops listening and ends every connection.
package proxy

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kulehq/kule/kernel/internal/proxy/framing"
)

// Errors a caller can test for.
var (
	// ErrClosed: the proxy is closed (its authority was not made, a
	// connection handed to Serve was not taken).
	ErrClosed         = errors.New("proxy: closed")
	ErrNoDecider      = errors.New("proxy: no decider given")
	ErrNoBundlePath   = errors.New("proxy: hosts are intercepted but no CA bundle path is given")
	ErrNoSystemRoots  = errors.New("proxy: no system certificate bundle found")
	ErrNotIntercepted = errors.New("proxy: host is not intercepted")
	ErrPrivateAddress = errors.New("proxy: host resolves to a loopback, private or other non-public address")
	ErrBadSecret      = errors.New("proxy: secret is incomplete")
)

// Decision is the policy's answer for one connection.
type Decision struct {
	Allow  bool
	Rule   string // the rule that decided, e.g. "package-registries"
	Reason string // for a refusal, e.g. "waits for approval"
	// Named says the person named this exact host:port (an agent
	// profile's endpoint, kule exec --allow-host, a remembered rule, a
	// question they answered). Only a named connection may lead to a
	// loopback, private or other non-global address: a model on this
	// machine or the person's network is reached because it was named,
	// never because a name resolved there.
	Named bool
}

// Decider judges a connection to host:port (host in lower case, no brackets).
type Decider func(ctx context.Context, host string, port int) Decision

// Registry is a package registry whose host is looked into only to refuse
// publishing.
type Registry struct {
	Host string
	// ReadOnlyPosts are path prefixes where a POST only reads (a registry's
	// audit or search endpoint); every other POST, and every PUT, PATCH and
	// DELETE, is refused.
	ReadOnlyPosts []string
}

// Config is what Start needs.
type Config struct {
	Decide     Decider
	LogPath    string // the task's network.jsonl; "" keeps entries in memory only
	Secrets    []Secret
	Registries []Registry

	// BundlePath is where the CA bundle (system roots + the run authority)
	// is written; BundlePathSeen is that file's path as commands see it
	// (inside the sandbox), BundlePath when empty.
	BundlePath     string
	BundlePathSeen string

	// UpstreamRoots verifies servers behind intercepted hosts; nil is the
	// system's roots. SystemRootsPEM goes into the bundle; nil reads the
	// system's bundle file.
	UpstreamRoots  *x509.CertPool
	SystemRootsPEM []byte

	// Dial connects upstream; nil dials directly and refuses to connect to
	// a loopback, private, link-local or other non-global address unless
	// the decision was Named (an IP literal as much as a name resolving
	// there).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)

	// Token, when set, must come with every request to the proxy as
	// Proxy-Authorization: Basic base64("kule:"+Token) (ProxyEnv puts it in
	// the proxy URL, which clients turn into that header). It keeps other
	// processes on the host's loopback from using the task's proxy.
	Token string

	Listen      string        // default 127.0.0.1:0
	IdleTimeout time.Duration // keep-alive idle limit; default 2 minutes

	// Test hooks, never set otherwise: off takes checks away to show what
	// each stops; resolver resolves names for the default dialer (nil: the
	// system's); dialing is called with each address the default dialer is
	// about to connect to, after the checks, and its error stops the dial;
	// relayed is called with the bytes of each answer body relayed socket
	// to socket (see rawBodyFor); tunneled with the bytes of each plain
	// tunnel, each way, once it ends, and whether both ways went socket to
	// socket (see splice).
	off      guard
	resolver *net.Resolver
	dialing  func(address string) error
	relayed  func(n int64)
	tunneled func(up, down int64, raw bool)
}

// Proxy is one task's running proxy.
type Proxy struct {
	cfg      Config
	ctx      context.Context
	cancel   context.CancelFunc
	ln       net.Listener
	hosts    []string             // the intercepted hosts; none: no authority is made
	caOnce   sync.Once            // makes ca and the bundle (Ready), or closes them off (Close)
	ca       *authority           // set within caOnce
	caErr    error                // likewise
	secrets  map[string][]*Secret // host → secrets
	all      []*Secret
	registry map[string]Registry
	log      journal
	bundle   string

	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	done  atomic.Bool
}

// Start makes the run authority when hosts are to be looked into, writes the
// CA bundle, and starts listening.
func Start(ctx context.Context, cfg Config) (*Proxy, error) {
	p, err := Begin(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := p.Ready(); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// Begin is Start without the run authority: it listens at once, and Ready
// makes the authority and the CA bundle, so that a sandbox can fork its
// helper first (making them beside the fork, their allocations' page faults
// and the fork took the same lock on kule's memory: 1.8 ms of every
// sandboxed run) and make them while the helper starts. Nothing may use the
// bundle before Ready returns nil; a connection to an intercepted host
// makes them, or waits for them.
func Begin(ctx context.Context, cfg Config) (*Proxy, error) {
	if cfg.Decide == nil {
		return nil, ErrNoDecider
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = 2 * time.Minute
	}
	p := &Proxy{
		cfg:      cfg,
		secrets:  map[string][]*Secret{},
		registry: map[string]Registry{},
		conns:    map[net.Conn]struct{}{},
		log:      journal{path: cfg.LogPath},
	}
	var hosts []string
	for i := range cfg.Secrets {
		s := cfg.Secrets[i]
		if s.Name == "" || s.Value == "" || len(s.Hosts) == 0 {
			return nil, fmt.Errorf("%w: %q needs a name, a value and a host", ErrBadSecret, s.Name)
		}
		if s.Placeholder == "" {
			s.Placeholder = NewPlaceholder(s.Name)
		}
		if strings.ContainsFunc(s.Value, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
			return nil, fmt.Errorf("%w: %q holds a control character (a line break?) that no header may carry", ErrBadSecret, s.Name)
		}
		if strings.Contains(s.Value, s.Placeholder) || strings.Contains(s.Placeholder, s.Value) {
			return nil, fmt.Errorf("%w: %q value and placeholder overlap", ErrBadSecret, s.Name)
		}
		sp := &s
		p.all = append(p.all, sp)
		for _, h := range s.Hosts {
			key, name := secretHostKey(h)
			p.secrets[key] = append(p.secrets[key], sp)
			if name != "" {
				hosts = append(hosts, name)
			}
		}
	}
	for _, r := range cfg.Registries {
		r.Host = normHost(r.Host)
		p.registry[r.Host] = r
		hosts = append(hosts, r.Host)
	}
	if len(hosts) > 0 {
		if cfg.BundlePath == "" {
			return nil, ErrNoBundlePath
		}
		p.hosts = hosts
		p.bundle = cfg.BundlePath
		if cfg.BundlePathSeen != "" {
			p.bundle = cfg.BundlePathSeen
		}
	}
	// Plain TCP: Go listens with multipath TCP by default, which on the
	// loopback only costs its probes and a heavier socket.
	var lc net.ListenConfig
	lc.SetMultipathTCP(false)
	ln, err := lc.Listen(ctx, "tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("proxy: listen: %w", err)
	}
	p.ln = ln
	p.ctx, p.cancel = context.WithCancel(ctx)
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port on the host's loopback.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Ready makes the run authority and writes the CA bundle, the first time it
// is called (see Begin), and returns what went wrong making them; nil at
// once when nothing is intercepted. Callers at once wait for the first.
func (p *Proxy) Ready() error {
	if len(p.hosts) == 0 {
		return nil
	}
	p.caOnce.Do(func() {
		ca, err := newAuthority(p.hosts, time.Now())
		if err == nil {
			err = writeBundle(p.cfg.BundlePath, p.cfg.SystemRootsPEM, ca.certPEM)
		}
		p.ca, p.caErr = ca, err
	})
	return p.caErr
}

// CACertPEM is the run authority's certificate, nil when nothing is
// intercepted (or the authority could not be made).
func (p *Proxy) CACertPEM() []byte {
	if p.Ready() != nil || p.ca == nil {
		return nil
	}
	return p.ca.certPEM
}

// Entries are the connections logged since Start.
func (p *Proxy) Entries() []Entry { return p.log.all() }

// Summary is Summary(p.Entries()).
func (p *Proxy) Summary() []string { return Summary(p.Entries()) }

// Env is what a command needs to go through this proxy: ProxyEnv(Addr()),
// CAEnv() and SecretEnv(). A runner whose commands reach the proxy through a
// forwarder uses ProxyEnv(forwarderAddr) instead of the first part.
func (p *Proxy) Env() []string {
	env := ProxyEnv(p.Addr(), p.cfg.Token)
	env = append(env, p.CAEnv()...)
	return append(env, p.SecretEnv()...)
}

// ProxyEnv points the usual proxy variables (upper and lower case) at addr,
// with the token as the proxy URL's password when there is one.
func ProxyEnv(addr, token string) []string {
	u := "http://" + addr
	if token != "" {
		u = "http://kule:" + url.QueryEscape(token) + "@" + addr
	}
	var env []string
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"} {
		env = append(env, k+"="+u, strings.ToLower(k)+"="+u)
	}
	return append(env, "NO_PROXY=", "no_proxy=")
}

// CAVars are the variables CAEnv sets to the CA bundle.
var CAVars = []string{
	"SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
	"GIT_SSL_CAINFO", "PIP_CERT", "AWS_CA_BUNDLE", "CARGO_HTTP_CAINFO",
	"NPM_CONFIG_CAFILE", "npm_config_cafile", "DENO_CERT", "BUNDLE_SSL_CA_CERT",
}

// CAEnv points CAVars at the CA bundle; empty when nothing is intercepted.
func (p *Proxy) CAEnv() []string {
	if p.bundle == "" {
		return nil
	}
	env := make([]string, 0, len(CAVars))
	for _, k := range CAVars {
		env = append(env, k+"="+p.bundle)
	}
	return env
}

// SecretEnv gives each secret's name its placeholder: STRIPE_KEY=kule-secret-….
func (p *Proxy) SecretEnv() []string {
	var env []string
	for _, s := range p.all {
		env = append(env, s.Name+"="+s.Placeholder)
	}
	return env
}

// Close stops listening and ends every connection.
func (p *Proxy) Close() error {
	if p.done.Swap(true) {
		return nil
	}
	p.cancel()
	// A bundle being written is finished before Close returns; one not
	// begun never will be.
	p.caOnce.Do(func() { p.caErr = ErrClosed })
	err := p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	for _, s := range p.all {
		if s.Release != nil {
			s.Release()
		}
	}
	return err
}

func (p *Proxy) track(c net.Conn, on bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on {
		if p.done.Load() {
			return false
		}
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
	return true
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if p.done.Load() {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if p.admit(c) != nil {
			return
		}
	}
}

// Serve serves c, a connection to the proxy accepted by a caller in this
// process, as if it had come to the proxy's listener: the same token, the
// same decisions, checks and log, and closed with the proxy. The sandbox's
// bridge hands over each connection its command makes this way, which
// spares the copy through a second loopback connection to Addr. The proxy
// owns c from then on; once the proxy is closed, c is closed and ErrClosed
// returned.
func (p *Proxy) Serve(c net.Conn) error {
	return p.admit(c)
}

// admit tracks c and serves it on a goroutine of its own; a closed proxy
// closes c instead. The WaitGroup is added to under the lock that Close
// takes before it waits, so no connection starts once Close waits.
func (p *Proxy) admit(c net.Conn) error {
	p.mu.Lock()
	if p.done.Load() {
		p.mu.Unlock()
		c.Close()
		return ErrClosed
	}
	p.conns[c] = struct{}{}
	p.wg.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.wg.Done()
		defer p.track(c, false)
		defer c.Close()
		p.serve(c)
	}()
	return nil
}

// serve reads requests to the proxy itself: CONNECT or absolute-form HTTP.
func (p *Proxy) serve(c net.Conn) {
	br := bufio.NewReaderSize(c, 32<<10)
	bw := bufio.NewWriterSize(c, 32<<10)
	var fw *forwarder
	defer func() {
		if fw != nil {
			fw.finish()
		}
	}()
	for {
		c.SetReadDeadline(time.Now().Add(p.cfg.IdleTimeout))
		req, err := framing.ReadRequest(br)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrDeadlineExceeded) {
				writeError(bw, statusFor(err), err.Error())
			}
			return
		}
		c.SetReadDeadline(time.Time{})
		if !p.authorized(req) {
			body := "kule proxy: this proxy belongs to a task; use the proxy URL from the task's environment\n"
			fmt.Fprintf(bw, "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"kule\"\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
			bw.Flush()
			return
		}
		if req.Method == http.MethodConnect {
			if fw != nil {
				fw.finish()
				fw = nil
			}
			p.connect(c, br, bw, req)
			return
		}
		keep, nfw := p.forward(c, bw, req, fw)
		fw = nfw
		if !keep {
			return
		}
	}
}

// authorized checks the request's Proxy-Authorization against the token.
func (p *Proxy) authorized(req *framing.Request) bool {
	if p.cfg.Token == "" {
		return true
	}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("kule:"+p.cfg.Token))
	got, _ := req.Header.Get("Proxy-Authorization")
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

func statusFor(err error) int {
	if errors.Is(err, framing.ErrVersion) {
		return http.StatusHTTPVersionNotSupported
	}
	if errors.Is(err, framing.ErrTooLarge) {
		return http.StatusRequestHeaderFieldsTooLarge
	}
	return http.StatusBadRequest
}

// writeError answers with status and a short text body, and asks the client
// to close the connection.
func writeError(bw *bufio.Writer, status int, msg string) {
	body := "kule proxy: " + msg + "\n"
	fmt.Fprintf(bw, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, http.StatusText(status), len(body), body)
	bw.Flush()
}

func splitHostPort(hp string, defPort int) (string, int, error) {
	host, ps, err := net.SplitHostPort(hp)
	if err != nil {
		if defPort == 0 {
			return "", 0, fmt.Errorf("proxy: %q is not host:port", hp)
		}
		host, ps = hp, strconv.Itoa(defPort)
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port <= 0 || port > 65535 {
		return "", 0, fmt.Errorf("proxy: bad port in %q", hp)
	}
	host = normHost(host)
	if host == "" {
		return "", 0, fmt.Errorf("proxy: no host in %q", hp)
	}
	for _, ch := range host {
		if !(ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || ch == '.' || ch == '-' || ch == '_' || ch == ':') {
			return "", 0, fmt.Errorf("proxy: bad host %q", host)
		}
	}
	return host, port, nil
}

func (p *Proxy) refuse(bw *bufio.Writer, host string, port int, d Decision) {
	p.log.add(Entry{Time: time.Now().UTC(), Host: host, Port: port, Verdict: Refused, Rule: d.Rule, Reason: d.Reason, Loopback: LoopbackName(host)})
	msg := fmt.Sprintf("connection to %s:%d refused by the task's policy", host, port)
	if d.Reason != "" {
		msg += ": " + d.Reason
	}
	if d.Rule != "" {
		msg += " (" + d.Rule + ")"
	}
	writeError(bw, http.StatusForbidden, msg)
}

// dial connects to host:port. Unless named (see Decision.Named), every
// address it would connect to must be globally reachable: a host name
// resolving into the machine or its networks, and an IP literal there, are
// refused before a byte is sent.
func (p *Proxy) dial(host string, port int, named bool) (net.Conn, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	if p.cfg.Dial != nil {
		return p.cfg.Dial(ctx, "tcp", addr)
	}
	check := !named
	if net.ParseIP(host) != nil && !p.on(guardNamedLocal) {
		check = false // the check taken away: a literal the decider allowed is dialled as asked
	}
	d := net.Dialer{Resolver: p.cfg.resolver, Control: func(_, address string, _ syscall.RawConn) error {
		if check {
			if err := p.globalOnly(host, address); err != nil {
				return err
			}
		}
		if p.cfg.dialing != nil {
			return p.cfg.dialing(address)
		}
		return nil
	}}
	return d.DialContext(ctx, "tcp", addr)
}

// globalOnly refuses to connect a host name to an address that is not
// globally reachable (see nonGlobal): a name on the internet must not lead
// into the machine or the networks around it.
func (p *Proxy) globalOnly(host, address string) error {
	h, _, _ := net.SplitHostPort(address)
	ip, err := netip.ParseAddr(h)
	if err != nil {
		return fmt.Errorf("%w: %s is %s", ErrPrivateAddress, host, h)
	}
	if !p.on(guardNonGlobal) {
		if a := net.IP(ip.AsSlice()); !(a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsUnspecified() || a.IsMulticast()) {
			return nil // the narrower check the proxy had before: CGNAT and the rest pass
		}
	}
	if nonGlobal(ip) {
		return fmt.Errorf("%w: %s is %s, which is not a public internet address (loopback, private, carrier-grade NAT, link-local or reserved); nothing was sent to it (a local model or gateway is reached when its exact host:port is named: a profile's hosts, kule exec --allow-host, kule rules allow)", ErrPrivateAddress, host, h)
	}
	return nil
}

func (p *Proxy) intercepted(host string, port int) bool {
	if len(p.hosts) == 0 || net.ParseIP(host) != nil {
		return false // the run's authority signs no certificate for an address
	}
	_, ok := p.registry[host]
	return ok || len(p.secretsFor(host, port)) > 0
}

// connect handles CONNECT: a refusal, a plain tunnel, or an intercepted one.
func (p *Proxy) connect(c net.Conn, br *bufio.Reader, bw *bufio.Writer, req *framing.Request) {
	host, port, err := splitHostPort(req.Target, 0)
	if err != nil {
		writeError(bw, http.StatusBadRequest, err.Error())
		return
	}
	d := p.cfg.Decide(p.ctx, host, port)
	if !d.Allow {
		p.refuse(bw, host, port, d)
		return
	}
	e := Entry{Time: time.Now().UTC(), Host: host, Port: port, Verdict: Tunneled, Rule: d.Rule, Named: d.Named, Loopback: LoopbackName(host)}
	up, err := p.dial(host, port, d.Named)
	if err != nil {
		e.Error = "connect: " + err.Error()
		p.log.add(e)
		writeError(bw, http.StatusBadGateway, fmt.Sprintf("cannot reach %s:%d: %v", host, port, err))
		return
	}
	defer up.Close()
	if !p.track(up, true) {
		return
	}
	defer p.track(up, false)
	e.Loopback = e.Loopback || remoteLoopback(up)
	if secrets := p.secretsFor(host, port); len(secrets) > 0 && LoopbackName(host) && remoteLoopback(up) && !p.intercepted(host, port) {
		p.plainTunnel(c, br, up, host, port, &e, secrets) // a local model's key, over plain HTTP inside the tunnel
		p.log.add(e)
		return
	}
	if p.intercepted(host, port) {
		e.Intercepted = true
		p.intercept(c, br, bw, up, host, port, &e)
		p.log.add(e)
		return
	}
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		w, _ := up.Write(b)
		e.BytesUp += int64(w)
		br.Discard(n)
	}
	e.BytesUp, e.BytesDown = p.splice(c, up, e.BytesUp)
	p.log.add(e)
}

type closeWriter interface{ CloseWrite() error }

// splice copies both ways until both ends are done, and tells the tunneled
// hook how. A plain tunnel is nothing the proxy reads, so its bytes should
// never cross the proxy's memory: between two TCP connections as they are
// (not wrapped) each direction goes from socket to socket (pipeTCP).
func (p *Proxy) splice(client, up net.Conn, upStart int64) (int64, int64) {
	var upN, downN int64
	var upRaw, downRaw bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		upN, upRaw = pipeTCP(up, client)
		if cw, ok := up.(closeWriter); ok {
			cw.CloseWrite()
		} else {
			up.Close()
		}
	}()
	downN, downRaw = pipeTCP(client, up)
	if cw, ok := client.(closeWriter); ok {
		cw.CloseWrite()
	}
	// The client may keep writing after the server finished; give it a
	// moment, then end the tunnel.
	client.SetReadDeadline(time.Now().Add(5 * time.Second))
	wg.Wait()
	if p.cfg.tunneled != nil {
		p.cfg.tunneled(upN, downN, upRaw && downRaw)
	}
	return upStart + upN, downN
}

// pipeTCP copies src to dst until src ends and returns the bytes written,
// exactly (the log counts them), and whether they went socket to socket.
// Two *net.TCPConn are joined by TCPConn.ReadFrom, which moves the bytes
// by splice(2) through a pipe in the kernel; anything else (a wrapper that
// counts or changes what passes, a Config.Dial's own connection) is copied
// through a buffer.
func pipeTCP(dst, src net.Conn) (int64, bool) {
	d, ok1 := dst.(*net.TCPConn)
	s, ok2 := src.(*net.TCPConn)
	if ok1 && ok2 {
		n, _ := d.ReadFrom(s)
		return n, true
	}
	n, _ := io.Copy(dst, src)
	return n, false
}

// countingConn counts the bytes of a connection.
type countingConn struct {
	net.Conn
	r, w *int64
}

func (c countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	atomic.AddInt64(c.r, int64(n))
	return n, err
}

func (c countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	atomic.AddInt64(c.w, int64(n))
	return n, err
}

// relayBuffer is the size of the buffers an answer crosses on an
// intercepted connection (16 TLS records).
const relayBuffer = 256 << 10

// batchConn gathers what TLS writes while a batchWriter writes, so that the
// records of one buffer leave in one system call instead of one each; at any
// other time (the handshake, an alert) writes go straight through.
type batchConn struct {
	net.Conn
	mu       sync.Mutex
	batching bool
	buf      []byte
}

func (c *batchConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.batching {
		c.buf = append(c.buf, b...)
		return len(b), nil
	}
	return c.Conn.Write(b)
}

func (c *batchConn) begin() {
	c.mu.Lock()
	c.batching = true
	c.mu.Unlock()
}

// flush sends what was gathered and ends the batch.
func (c *batchConn) flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.batching = false
	if len(c.buf) == 0 {
		return nil
	}
	_, err := c.Conn.Write(c.buf)
	c.buf = c.buf[:0]
	return err
}

// batchWriter writes through TLS with the records batched beneath it.
type batchWriter struct {
	tls *tls.Conn
	raw *batchConn
}

func (w batchWriter) Write(b []byte) (int, error) {
	w.raw.begin()
	n, err := w.tls.Write(b)
	if ferr := w.raw.flush(); err == nil && ferr != nil {
		err = ferr
	}
	return n, err
}

// prefixConn reads what a bufio.Reader already holds before the connection.
type prefixConn struct {
	net.Conn
	r io.Reader
}

func (c prefixConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// intercept terminates the client's TLS with a leaf of the run authority,
// opens TLS to the real host, and relays request by request.
func (p *Proxy) intercept(c net.Conn, br *bufio.Reader, bw *bufio.Writer, up net.Conn, host string, port int, e *Entry) {
	err := p.Ready()
	var leaf *tls.Certificate
	if err == nil {
		leaf, err = p.ca.leaf(host)
	}
	if err != nil {
		e.Error = err.Error()
		writeError(bw, http.StatusBadGateway, err.Error())
		return
	}
	// TLS reads a record at a time; a buffer beneath it takes what the
	// socket holds, many records, in one system call.
	upTLS := tls.Client(prefixConn{Conn: up, r: bufio.NewReaderSize(up, relayBuffer)}, &tls.Config{
		ServerName: host,
		RootCAs:    p.cfg.UpstreamRoots,
		NextProtos: []string{"http/1.1"},
		MinVersion: tls.VersionTLS12,
	})
	hctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	err = upTLS.HandshakeContext(hctx)
	cancel()
	if err != nil {
		e.Error = "upstream tls: " + err.Error()
		writeError(bw, http.StatusBadGateway, fmt.Sprintf("TLS with %s failed: %v", host, err))
		return
	}
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	counted := countingConn{Conn: prefixConn{Conn: c, r: br}, r: &e.BytesUp, w: &e.BytesDown}
	batched := &batchConn{Conn: counted}
	cTLS := tls.Server(batched, &tls.Config{
		NextProtos: []string{"http/1.1"}, // never h2: clients fall back to HTTP/1.1
		MinVersion: tls.VersionTLS12,
		// Full-size records from the first byte: the client is a program
		// on this machine, not a browser waiting for its first paint.
		DynamicRecordSizingDisabled: true,
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			if hello.ServerName != "" && normHost(hello.ServerName) != host {
				return nil, fmt.Errorf("proxy: TLS name %q differs from CONNECT host %q", hello.ServerName, host)
			}
			return leaf, nil
		},
	})
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if err := cTLS.Handshake(); err != nil {
		e.Error = "client tls (does the command trust the CA bundle?): " + err.Error()
		return
	}
	c.SetDeadline(time.Time{})
	cbr := bufio.NewReaderSize(cTLS, 32<<10)
	cbw := bufio.NewWriterSize(batchWriter{cTLS, batched}, relayBuffer)
	ubr := bufio.NewReaderSize(upTLS, relayBuffer)
	ubw := bufio.NewWriterSize(upTLS, 32<<10)
	used := map[string]bool{}
	for {
		c.SetReadDeadline(time.Now().Add(p.cfg.IdleTimeout))
		req, err := framing.ReadRequest(cbr)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrDeadlineExceeded) {
				e.Refusals = append(e.Refusals, "a request: "+err.Error())
				writeError(cbw, statusFor(err), err.Error())
			}
			break
		}
		c.SetReadDeadline(time.Time{})
		e.Requests++
		target, herr := originTarget(req, "https", host, port)
		if herr != "" {
			e.Refusals = append(e.Refusals, req.Method+" "+clip(req.Target)+": "+herr)
			writeError(cbw, http.StatusMisdirectedRequest, herr)
			break
		}
		if reason := p.registryRefusal(host, req, target); reason != "" {
			e.Refusals = append(e.Refusals, req.Method+" "+clip(target)+" ("+reason+")")
			writeError(cbw, http.StatusForbidden, reason+": "+req.Method+" "+clip(target)+" to "+host+" is refused; registries are read-only to commands and answer only requests for packages by name")
			break
		}
		h := req.Header
		secrets := p.secretsFor(host, port)
		if len(secrets) > 0 {
			var ok bool
			if secrets, ok = p.leased(cbw, req, target, secrets, e); !ok {
				break
			}
			if h, ok = p.putSecrets(cbw, req, target, host, h, secrets, e, used); !ok {
				break
			}
		}
		if isWebSocket(req) {
			if err := p.webSocket(cbr, cbw, ubr, ubw, func() { upTLS.Close() }, func() { c.Close() }, req, target, h, secrets, e); err != nil {
				e.Error = err.Error()
			}
			break
		}
		keep, err := p.exchange(cbw, ubr, ubw, func() { upTLS.Close() }, req, target, h, p.blankValues(secrets), nil)
		if err != nil {
			e.Error = err.Error()
		}
		if !keep {
			break
		}
	}
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// blankValues are the byte strings blanked in the answers of a secret's
// host: each value, and the forms in which a server that echoes what it
// was sent commonly repeats it (see encodedForms).
func (p *Proxy) blankValues(secrets []*Secret) [][]byte {
	var vs [][]byte
	for _, s := range secrets {
		vs = append(vs, []byte(s.Value))
		if p.on(guardEncodedForms) {
			vs = append(vs, encodedForms([]byte(s.Value))...)
		}
	}
	return vs
}

// originTarget checks that the request is for host:port and returns its
// origin-form target. A Host header naming another host is refused: the
// secret must not reach a neighbour behind the same front.
func originTarget(req *framing.Request, scheme, host string, port int) (string, string) {
	target := req.Target
	if strings.HasPrefix(strings.ToLower(target), scheme+"://") {
		u, err := url.Parse(target)
		if err != nil {
			return "", "bad request target"
		}
		if !sameHost(u.Host, scheme, host, port) {
			return "", "request target names another host than the connection"
		}
		target = u.RequestURI()
	} else if !strings.HasPrefix(target, "/") && !(target == "*" && req.Method == http.MethodOptions) {
		return "", "request target is not a path"
	}
	if hh, ok := req.Header.Get("Host"); ok && !sameHost(hh, scheme, host, port) {
		return "", fmt.Sprintf("Host %q is not %s", hh, host)
	}
	return target, ""
}

func sameHost(hp, scheme, host string, port int) bool {
	def := 443
	if scheme == "http" {
		def = 80
	}
	h, pt, err := splitHostPort(hp, def)
	return err == nil && h == host && pt == port
}

// exchange relays one request and its response. It returns whether the client
// connection may carry another request.
// ends, when not nil, are the raw connections beneath cbw and ubr, through
// which an answer with nothing to blank may pass socket to socket (see
// rawBodyFor).
func (p *Proxy) exchange(cbw *bufio.Writer, ubr *bufio.Reader, ubw *bufio.Writer, abort func(), req *framing.Request, target string, h framing.Header, blankVals [][]byte, ends *rawEnds) (bool, error) {
	if exp, ok := req.Header.Get("Expect"); ok && strings.EqualFold(exp, "100-continue") {
		io.WriteString(cbw, "HTTP/1.1 100 Continue\r\n\r\n")
		cbw.Flush()
	}
	sent := make(chan error, 1)
	go func() {
		err := framing.WriteHead(ubw, req.Method, target, h, req.Chunked, req.ContentLength)
		if err == nil {
			if req.Chunked {
				cw := framing.ChunkedWriter{W: ubw}
				if _, err = io.Copy(cw, req.Body); err == nil {
					err = cw.Close()
				}
			} else if req.ContentLength > 0 {
				var n int64
				n, err = io.Copy(ubw, req.Body)
				if err == nil && n != req.ContentLength {
					err = io.ErrUnexpectedEOF
				}
			}
		}
		if err == nil {
			err = ubw.Flush()
		}
		if err != nil {
			abort() // the server waits for a body that will not come: end it
		}
		sent <- err
	}()
	var resp *http.Response
	var err error
	for {
		resp, err = http.ReadResponse(ubr, &http.Request{Method: req.Method})
		if err != nil {
			if serr := <-sent; serr != nil {
				writeError(cbw, http.StatusBadRequest, "the request body could not be relayed: "+serr.Error())
				return false, fmt.Errorf("request body: %w", serr)
			}
			// The parser quotes what it could not read: the secret may be in it.
			msg := err.Error()
			if p.on(guardStatus) {
				msg = blankString(msg, blankVals)
			}
			writeError(cbw, http.StatusBadGateway, "the server's answer could not be read: "+msg)
			return false, errors.New("upstream response: " + msg)
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			continue // 100 Continue was answered already; other 1xx are dropped
		}
		break
	}
	if err := <-sent; err != nil {
		resp.Body.Close()
		writeError(cbw, http.StatusBadRequest, "the request body could not be relayed: "+err.Error())
		return false, fmt.Errorf("request body: %w", err)
	}
	// Whichever body resp holds when exchange returns is closed: a relayed
	// one must not close the parsed body beneath it.
	defer func() { resp.Body.Close() }()
	for _, k := range []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Upgrade"} {
		resp.Header.Del(k)
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		writeError(cbw, http.StatusNotImplemented, "protocol upgrades other than WebSocket are not relayed on intercepted hosts")
		return false, nil
	}
	if len(blankVals) > 0 {
		if reason := p.blankResponse(resp, blankVals); reason != "" {
			writeError(cbw, http.StatusBadGateway, "the server's answer was withheld: "+reason+"; the answer may carry the secret, so it did not reach the command")
			return false, errors.New("answer withheld: " + reason)
		}
	}
	rawBodyFor(ends, ubr, req.Method, resp, blankVals)
	closeAfter := req.Close() || resp.Close
	resp.Close = closeAfter
	resp.Proto, resp.ProtoMajor, resp.ProtoMinor = "HTTP/1.1", 1, 1
	if err := writeAnswer(cbw, resp); err != nil {
		return false, fmt.Errorf("response to the client: %w", err)
	}
	return !resp.Close, nil
}

// writeAnswer writes resp to the client through cbw and flushes it. The
// head goes in one write (flushed piece by piece, each of its header lines
// was four system calls and, on a connection without Nagle, four packets,
// or four TLS records on an intercepted host); each piece of the body goes
// on as it comes, since cbw is flushed before every read of the body, a
// read that may wait on the server: a streamed answer (an agent's model
// speaking SSE) never waits in the buffer.
func writeAnswer(cbw *bufio.Writer, resp *http.Response) error {
	if _, raw := resp.Body.(*rawBody); !raw && resp.Body != nil && resp.Body != http.NoBody {
		resp.Body = flushBeforeRead{ReadCloser: resp.Body, w: cbw}
	}
	if err := resp.Write(pieceWriter{cbw}); err != nil {
		return err
	}
	return cbw.Flush()
}

// flushBeforeRead flushes w before each read of the body beneath it.
type flushBeforeRead struct {
	io.ReadCloser
	w *bufio.Writer
}

func (f flushBeforeRead) Read(p []byte) (int, error) {
	if err := f.w.Flush(); err != nil {
		return 0, err
	}
	return f.ReadCloser.Read(p)
}

// pieceWriter writes an answer into the client's buffer; its ReadFrom
// relays a body in large pieces (see ReadFrom).
type pieceWriter struct{ w *bufio.Writer }

func (f pieceWriter) Write(p []byte) (int, error) { return f.w.Write(p) }

// copyBufSize is the piece a relayed body is read in. The 32 KiB io.Copy
// would use cost a read and a write system call per 32 KiB, most of a
// plain-HTTP download's time through the proxy; one read still returns
// whatever has arrived, so a streamed answer goes on as it comes.
const copyBufSize = 256 << 10

var copyBufs = sync.Pool{New: func() any { b := make([]byte, copyBufSize); return &b }}

// ReadFrom relays r in pieces of up to copyBufSize, each written and
// flushed as soon as it is read (io.Copy and the response writer use it in
// place of their own 32 KiB buffer).
func (f pieceWriter) ReadFrom(r io.Reader) (int64, error) {
	if lr, ok := r.(*io.LimitedReader); ok {
		if b, ok := lr.R.(*rawBody); ok && !b.relayed {
			n, err := b.relay(f.w, lr.N)
			lr.N -= n
			return n, err
		}
	}
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	var total int64
	for {
		n, rerr := r.Read(buf)
		if n > 0 {
			if _, err := f.w.Write(buf[:n]); err != nil {
				return total, err
			}
			if err := f.w.Flush(); err != nil {
				return total, err
			}
			total += int64(n)
		}
		if rerr == io.EOF {
			return total, nil
		}
		if rerr != nil {
			return total, rerr
		}
	}
}

// forwarder is the upstream connection of plain-HTTP forwarding on one client
// connection; a request for another host:port ends it and makes a new one.
type forwarder struct {
	p          *Proxy
	host       string
	port       int
	raw, up    net.Conn
	ubr        *bufio.Reader
	ubw        *bufio.Writer
	e          Entry
	upN, downN int64
	onLoopback bool            // named as loopback and reached there: keys may go in plain HTTP
	used       map[string]bool // the secrets put into its requests
}

func (f *forwarder) finish() {
	f.up.Close()
	f.p.track(f.raw, false)
	f.e.BytesUp, f.e.BytesDown = atomic.LoadInt64(&f.upN), atomic.LoadInt64(&f.downN)
	f.p.log.add(f.e)
}

// forward relays one absolute-form plain-HTTP request.
func (p *Proxy) forward(c net.Conn, bw *bufio.Writer, req *framing.Request, fw *forwarder) (bool, *forwarder) {
	u, err := url.Parse(req.Target)
	if err != nil || u.Host == "" {
		writeError(bw, http.StatusBadRequest, "a proxy request needs an absolute http:// target or CONNECT")
		return false, fw
	}
	if !strings.EqualFold(u.Scheme, "http") {
		writeError(bw, http.StatusBadRequest, u.Scheme+":// through the proxy needs CONNECT")
		return false, fw
	}
	host, port, err := splitHostPort(u.Host, 80)
	if err != nil {
		writeError(bw, http.StatusBadRequest, err.Error())
		return false, fw
	}
	if fw != nil && (fw.host != host || fw.port != port) {
		fw.finish()
		fw = nil
	}
	if fw == nil {
		d := p.cfg.Decide(p.ctx, host, port)
		if !d.Allow {
			p.refuse(bw, host, port, d)
			return false, nil
		}
		nf := &forwarder{p: p, host: host, port: port, e: Entry{Time: time.Now().UTC(), Host: host, Port: port, Verdict: Forwarded, Rule: d.Rule, Named: d.Named, Loopback: LoopbackName(host)}}
		up, err := p.dial(host, port, d.Named)
		if err != nil {
			nf.e.Error = "connect: " + err.Error()
			p.log.add(nf.e)
			writeError(bw, http.StatusBadGateway, fmt.Sprintf("cannot reach %s:%d: %v", host, port, err))
			return false, nil
		}
		if !p.track(up, true) {
			up.Close()
			return false, nil
		}
		// Keys go over plain HTTP only to an endpoint named as this
		// machine's loopback and reached there: nothing else sees the
		// bytes between the proxy and it.
		nf.onLoopback = LoopbackName(host) && remoteLoopback(up)
		nf.e.Loopback = nf.e.Loopback || remoteLoopback(up)
		nf.raw = up
		nf.up = countingConn{Conn: up, r: &nf.downN, w: &nf.upN}
		nf.ubr = bufio.NewReaderSize(nf.up, 32<<10)
		nf.ubw = bufio.NewWriterSize(nf.up, 32<<10)
		fw = nf
	}
	fw.e.Requests++
	target, herr := originTarget(req, "http", host, port)
	if herr != "" {
		fw.e.Refusals = append(fw.e.Refusals, req.Method+" "+clip(req.Target)+": "+herr)
		writeError(bw, http.StatusMisdirectedRequest, herr)
		return false, fw
	}
	if reason := p.registryRefusal(host, req, target); reason != "" {
		fw.e.Refusals = append(fw.e.Refusals, req.Method+" "+clip(target)+" ("+reason+")")
		writeError(bw, http.StatusForbidden, reason+": "+req.Method+" "+clip(target)+" to "+host+" is refused; registries are read-only to commands and answer only requests for packages by name")
		return false, fw
	}
	h := req.Header
	secrets := p.secretsFor(host, port)
	if len(secrets) > 0 {
		if !fw.onLoopback && p.on(guardPlainLoopback) {
			for _, f := range req.Header {
				if IsCredentialHeader(f.Name) {
					fw.e.Refusals = append(fw.e.Refusals, req.Method+" "+clip(target)+" (credential over plain http)")
					writeError(bw, http.StatusForbidden, "credentials for "+host+" go only over https, or over plain http to an endpoint on this machine's loopback; nothing was sent")
					return false, fw
				}
			}
			secrets = nil
		} else {
			if fw.used == nil {
				fw.used = map[string]bool{}
			}
			var ok bool
			if secrets, ok = p.leased(bw, req, target, secrets, &fw.e); !ok {
				return false, fw
			}
			if h, ok = p.putSecrets(bw, req, target, host, h, secrets, &fw.e, fw.used); !ok {
				return false, fw
			}
		}
	}
	h = h.Del("Host")
	h = append(framing.Header{{Name: "Host", Value: u.Host}}, h...)
	keep, err := p.exchange(bw, fw.ubr, fw.ubw, func() { fw.up.Close() }, req, target, h, p.blankValues(secrets), newRawEnds(c, fw.raw, &fw.downN, p.cfg.relayed))
	if err != nil {
		fw.e.Error = err.Error()
	}
	return keep, fw
}

// ForTask returns a Config laid out for a task, with a fresh Token: the log in the task
// directory's network.jsonl, the CA bundle in the task's tmp directory
// (tmpDir on the host, tmpSeen as commands see it, e.g. /tmp inside the
// sandbox). The caller adds Decide, Secrets and Registries.
func ForTask(taskDir, tmpDir, tmpSeen string) Config {
	if tmpSeen == "" {
		tmpSeen = tmpDir
	}
	var tok [16]byte
	_, _ = rand.Read(tok[:])
	return Config{
		Token:          hex.EncodeToString(tok[:]),
		LogPath:        filepath.Join(taskDir, "network.jsonl"),
		BundlePath:     filepath.Join(tmpDir, "kule-ca-bundle.pem"),
		BundlePathSeen: filepath.Join(tmpSeen, "kule-ca-bundle.pem"),
	}
}

// Token is the per-run token clients must present (empty: none).
func (p *Proxy) Token() string { return p.cfg.Token }
