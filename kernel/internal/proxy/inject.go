package proxy

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"

	"github.com/kulehq/kule/kernel/internal/proxy/framing"
)

// Secret is one value the proxy puts into requests to its hosts in place of
// its placeholder.
type Secret struct {
	Name        string // e.g. STRIPE_KEY
	Value       string // the real value; never leaves the proxy except to Hosts
	Placeholder string // what the task's commands see; made by Start when empty
	// Hosts it may be sent to: exact names (over TLS, any port), or
	// endpoints as host:port ("localhost:4000", "127.0.0.1:11434": that
	// port only; over plain HTTP only where it is this machine's loopback).
	Hosts []string
	// FramePaths are the places in a WebSocket text message (a JSON
	// object, dotted paths: "d.token") where the placeholder is replaced,
	// on a connection to one of Hosts; none: never in a frame (see
	// websocket.go).
	FramePaths []string
	// Lease, when set, gives the value at each request instead of Value: a
	// leased credential that renews within its budget; Value is then the
	// lease's first value. An error (the lease is spent) refuses the
	// request and sends nothing: the proxy fails closed. Release is called
	// once when the proxy closes.
	Lease   func() (string, error)
	Release func()
}

// current is secrets with each leased value as its lease gives it now, or
// the refusal of a lease that gives none.
func (p *Proxy) current(secrets []*Secret) ([]*Secret, string) {
	var out []*Secret
	for i, s := range secrets {
		if s.Lease == nil {
			if out != nil {
				out = append(out, s)
			}
			continue
		}
		if out == nil {
			out = append(make([]*Secret, 0, len(secrets)), secrets[:i]...)
		}
		v, err := s.Lease()
		if err == nil && (v == "" || strings.ContainsFunc(v, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f })) {
			err = fmt.Errorf("the lease of %s gave no usable value", s.Name)
		}
		if err != nil && p.on(guardSpentLease) {
			return nil, err.Error()
		}
		c := *s
		if err != nil {
			v = s.Value // unguarded: the first value goes on being sent
		}
		c.Value = v
		out = append(out, &c)
	}
	if out == nil {
		return secrets, ""
	}
	return out, ""
}

// PlaceholderPrefix starts every placeholder Kule hands out.
const PlaceholderPrefix = "kule-secret-"

var nameClean = regexp.MustCompile(`[^A-Za-z0-9_]`)

// NewPlaceholder returns a fresh placeholder for the secret called name:
// kule-secret-<NAME>-<32 hex>. It holds nothing of the value.
func NewPlaceholder(name string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return PlaceholderPrefix + nameClean.ReplaceAllString(name, "_") + "-" + hex.EncodeToString(b[:])
}

// credentialHeaders are the header fields that carry credentials. A
// placeholder is replaced in these and nowhere else.
var credentialHeaders = map[string]bool{
	"authorization":        true,
	"x-api-key":            true,
	"api-key":              true,
	"apikey":               true,
	"x-goog-api-key":       true,
	"x-auth-token":         true,
	"x-access-token":       true,
	"private-token":        true,
	"x-subscription-token": true,
	"authentication":       true,
}

// IsCredentialHeader reports whether a header field carries credentials:
// Authorization and the usual API-key and token fields (x-api-key,
// x-goog-api-key, private-token, *-api-key, *-auth-token, *-access-token).
func IsCredentialHeader(name string) bool {
	n := strings.ToLower(name)
	if credentialHeaders[n] {
		return true
	}
	for _, suf := range []string{"-api-key", "-apikey", "-auth-token", "-access-token"} {
		if strings.HasSuffix(n, suf) {
			return true
		}
	}
	return false
}

// rewriteCredentials replaces placeholders of secrets (those for this host)
// in the credential headers of h. It returns the rewritten header, the names
// of the secrets put in, and foreign: the first credential header that holds
// no placeholder Kule knows for this host (the request must be refused).
func rewriteCredentials(h framing.Header, secrets []*Secret) (out framing.Header, used []string, foreign string) {
	out = make(framing.Header, 0, len(h))
	seen := map[string]bool{}
	for _, f := range h {
		if !IsCredentialHeader(f.Name) || f.Value == "" {
			out = append(out, f)
			continue
		}
		v, names := replaceInCredential(f.Name, f.Value, secrets)
		if len(names) == 0 {
			return nil, nil, f.Name
		}
		for _, n := range names {
			if !seen[n] {
				seen[n] = true
				used = append(used, n)
			}
		}
		out = append(out, framing.Field{Name: f.Name, Value: v})
	}
	return out, used, ""
}

func replaceInCredential(name, value string, secrets []*Secret) (string, []string) {
	if strings.EqualFold(name, "Authorization") {
		scheme, rest, ok := strings.Cut(value, " ")
		if ok && strings.EqualFold(scheme, "Basic") {
			raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(rest))
			if err == nil {
				dec, names := replacePlaceholders(string(raw), secrets)
				return scheme + " " + base64.StdEncoding.EncodeToString([]byte(dec)), names
			}
		}
	}
	return replacePlaceholders(value, secrets)
}

func replacePlaceholders(s string, secrets []*Secret) (string, []string) {
	var names []string
	for _, sec := range secrets {
		if strings.Contains(s, sec.Placeholder) {
			s = strings.ReplaceAll(s, sec.Placeholder, sec.Value)
			names = append(names, sec.Name)
		}
	}
	return s, names
}

// blankString replaces every value in s with as many '*'.
func blankString(s string, values [][]byte) string {
	b := []byte(s)
	blank(b, values)
	return string(b)
}

// blank overwrites every occurrence of each value in b with '*', in place.
// It looks for the value's rarest-looking byte (a digit or punctuation
// before a letter): bytes.Index looks for the first byte, and in text a
// secret's first letter recurs every few bytes, each a false start. Values
// that share such a byte (a secret and its encoded forms mostly share a
// digit) are looked for in one pass.
func blank(b []byte, values [][]byte) { blankGroups(b, anchorGroups(values)) }

// blankGroups is blank with the anchors chosen (anchorGroups).
func blankGroups(b []byte, groups []anchorGroup) {
	for _, g := range groups {
		for off := 0; off < len(b); {
			i := bytes.IndexByte(b[off:], g.c)
			if i < 0 {
				break
			}
			at := off + i
			for _, m := range g.members {
				j := at - m.k // where the value would start
				if j < 0 || j+len(m.v) > len(b) || !bytes.Equal(b[j:j+len(m.v)], m.v) {
					continue
				}
				for n := j; n < j+len(m.v); n++ {
					b[n] = '*'
				}
			}
			off = at + 1
		}
	}
}

// anchorGroup is the values looked for by one byte: each has c at index k.
type anchorGroup struct {
	c       byte
	members []anchored
}

type anchored struct {
	v []byte
	k int
}

// anchorGroups assigns each value an anchor byte, sharing one byte among as
// many values as it can among bytes no commoner than a digit (or the
// value's own rarest, when it has neither punctuation nor digits).
func anchorGroups(values [][]byte) []anchorGroup {
	var left [][]byte
	for _, v := range values {
		if len(v) > 0 {
			left = append(left, v)
		}
	}
	var out []anchorGroup
	for len(left) > 0 {
		if len(left) == 1 {
			v := left[0]
			k := anchor(v)
			return append(out, anchorGroup{c: v[k], members: []anchored{{v, k}}})
		}
		// The byte that most of the values left hold among their rare ones.
		var count [256]int
		for _, v := range left {
			var seen [256]bool
			limit := max(rank(v[anchor(v)]), 1)
			for _, c := range v {
				if rank(c) <= limit && !seen[c] {
					seen[c] = true
					count[c]++
				}
			}
		}
		best := 0
		for c := 1; c < 256; c++ {
			if count[c] > count[best] || count[c] == count[best] && rank(byte(c)) < rank(byte(best)) {
				best = c
			}
		}
		g := anchorGroup{c: byte(best)}
		rest := left[:0:0]
		for _, v := range left {
			limit := max(rank(v[anchor(v)]), 1)
			if k := bytes.IndexByte(v, byte(best)); k >= 0 && rank(byte(best)) <= limit {
				g.members = append(g.members, anchored{v, k})
			} else {
				rest = append(rest, v)
			}
		}
		if len(g.members) == 0 { // cannot happen: best is held by some value
			v := left[0]
			k := anchor(v)
			g = anchorGroup{c: v[k], members: []anchored{{v, k}}}
			rest = left[1:]
		}
		out = append(out, g)
		left = rest
	}
	return out
}

// rank orders bytes by how likely they are in ordinary text: punctuation
// 0, digits 1, capitals 2, anything else 3.
func rank(c byte) int {
	switch {
	case c >= 'a' && c <= 'z' || c == ' ' || c == '\n' || c == '\t' || c >= 0x80:
		return 3
	case c >= 'A' && c <= 'Z':
		return 2
	case c >= '0' && c <= '9':
		return 1
	}
	return 0
}

// anchor is the index of the byte of v least likely to occur in ordinary
// text: punctuation, then digits, then capitals, then anything else.
func anchor(v []byte) int {
	best := 0
	for i := range v {
		if rank(v[i]) < rank(v[best]) {
			best = i
		}
	}
	return best
}

// blanker reads r with every secret value overwritten by '*'. The length does
// not change, so a Content-Length stays right. It holds back the tail of each
// read that could be the start of a value (at most len(longest)-1 bytes) so
// a value split across reads is found.
//
// buf[off:cut] is blanked and ready to hand out; buf[cut:] is blanked but held
// back (it may be the start of a value).
type blanker struct {
	r        io.Reader
	values   [][]byte
	groups   []anchorGroup // values by anchor, chosen once
	keep     int
	buf      []byte
	off, cut int
	err      error
}

func newBlanker(r io.Reader, values [][]byte) io.Reader {
	if len(values) == 0 {
		return r
	}
	m := 0
	for _, v := range values {
		m = max(m, len(v))
	}
	return &blanker{r: r, values: values, groups: anchorGroups(values), keep: m - 1, buf: make([]byte, 0, max(128<<10, 4*m))}
}

// heldBack is the length of the longest tail of buf (at most keep bytes)
// that is the start of a secret value.
func (b *blanker) heldBack() int {
	for k := min(b.keep, len(b.buf)); k > 0; k-- {
		tail := b.buf[len(b.buf)-k:]
		for _, v := range b.values {
			if len(v) > k && bytes.HasPrefix(v, tail) {
				return k
			}
		}
	}
	return 0
}

func (b *blanker) Read(p []byte) (int, error) {
	for b.off == b.cut {
		if b.err != nil {
			return 0, b.err
		}
		// Move the held-back tail to the front and read behind it.
		n := copy(b.buf[:cap(b.buf)], b.buf[b.cut:])
		b.buf = b.buf[:n]
		b.off, b.cut = 0, 0
		scanFrom := 0
		m, err := b.r.Read(b.buf[n:cap(b.buf)])
		b.buf = b.buf[:n+m]
		if err != nil {
			b.err = err
		}
		// A value can start in the held-back tail: scan from the start.
		blankGroups(b.buf[scanFrom:], b.groups)
		// Hold back only a tail that could start a value: a streamed
		// answer that pauses is not kept waiting for bytes no secret needs.
		b.cut = len(b.buf) - b.heldBack()
		if b.err != nil {
			b.cut = len(b.buf)
		}
		if b.cut < 0 {
			b.cut = 0
		}
	}
	n := copy(p, b.buf[b.off:b.cut])
	b.off += n
	return n, nil
}

// putSecrets puts the secrets of host into the credential headers of h
// (see rewriteCredentials), asks for an answer it can blank (identity
// coding, no range), and records in e which secrets went. A credential
// that is not a placeholder of these secrets is refused with 403 and
// nothing is sent: ok is false and the connection ends.
func (p *Proxy) putSecrets(w *bufio.Writer, req *framing.Request, target, host string, h framing.Header, secrets []*Secret, e *Entry, used map[string]bool) (_ framing.Header, ok bool) {
	h, names, foreign := rewriteCredentials(h, secrets)
	if foreign != "" {
		e.Refusals = append(e.Refusals, req.Method+" "+clip(target)+" (foreign credential in "+foreign+")")
		writeError(w, http.StatusForbidden, fmt.Sprintf("the request to %s carries a credential in %s that Kule does not hold for this host; use $%s", host, foreign, secrets[0].Name))
		return nil, false
	}
	for _, n := range names {
		if !used[n] {
			used[n] = true
			e.Secrets = append(e.Secrets, n)
		}
	}
	h = h.Del("Accept-Encoding")
	h = append(h, framing.Field{Name: "Accept-Encoding", Value: "identity"})
	if p.on(guardRanges) {
		// A range of an answer can hold part of the value, shorter than
		// anything the blanker can match; ranges put together give it
		// whole. The whole answer is asked for, and blanked.
		h = h.Del("Range").Del("If-Range")
	}
	return h, true
}

// leased is secrets with their leases' values now (see current); a lease
// that gives none refuses the request with 403 and nothing is sent.
func (p *Proxy) leased(w *bufio.Writer, req *framing.Request, target string, secrets []*Secret, e *Entry) ([]*Secret, bool) {
	out, refusal := p.current(secrets)
	if refusal != "" {
		e.Refusals = append(e.Refusals, req.Method+" "+clip(target)+" (lease spent)")
		writeError(w, http.StatusForbidden, refusal)
		return nil, false
	}
	return out, true
}
