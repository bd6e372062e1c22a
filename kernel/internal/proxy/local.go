package proxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/kulehq/kule/kernel/internal/proxy/framing"
)

// plainTunnel serves a CONNECT to an endpoint on this machine's loopback
// that has secrets of its own (a local model's key) when what the client
// sends inside is plain HTTP, as clients do for ws:// and some for http://
// through a proxy: the requests are read, the key put into their
// credential headers and the answers blanked, as for plain forwarding. A
// client that speaks TLS inside gets a byte-for-byte tunnel (the run's
// authority signs nothing for an address): its key cannot be put in, and
// the line says so.
func (p *Proxy) plainTunnel(c net.Conn, br *bufio.Reader, up net.Conn, host string, port int, e *Entry, secrets []*Secret) {
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	first, err := br.Peek(1)
	c.SetReadDeadline(time.Time{})
	if err != nil {
		return
	}
	if first[0] == 0x16 { // a TLS handshake record
		e.Error = "TLS inside a tunnel to a loopback endpoint: its key cannot be put in (use http:// for a model on this machine)"
		n := br.Buffered()
		b, _ := br.Peek(n)
		w, _ := up.Write(b)
		br.Discard(n)
		e.BytesUp, e.BytesDown = p.splice(c, up, int64(w))
		return
	}
	cbw := bufio.NewWriterSize(c, 32<<10)
	counted := countingConn{Conn: up, r: &e.BytesDown, w: &e.BytesUp}
	ubr := bufio.NewReaderSize(counted, 32<<10)
	ubw := bufio.NewWriterSize(counted, 32<<10)
	used := map[string]bool{}
	for {
		c.SetReadDeadline(time.Now().Add(p.cfg.IdleTimeout))
		req, err := framing.ReadRequest(br)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrDeadlineExceeded) {
				e.Refusals = append(e.Refusals, "a request: "+err.Error())
				writeError(cbw, statusFor(err), err.Error())
			}
			return
		}
		c.SetReadDeadline(time.Time{})
		e.Requests++
		target, herr := originTarget(req, "http", host, port)
		if herr != "" {
			e.Refusals = append(e.Refusals, req.Method+" "+clip(req.Target)+": "+herr)
			writeError(cbw, http.StatusMisdirectedRequest, herr)
			return
		}
		h, ok := p.putSecrets(cbw, req, target, host, req.Header, secrets, e, used)
		if !ok {
			return
		}
		if isWebSocket(req) {
			if err := p.webSocket(br, cbw, ubr, ubw, func() { up.Close() }, func() { c.Close() }, req, target, h, secrets, e); err != nil {
				e.Error = err.Error()
			}
			return
		}
		keep, err := p.exchange(cbw, ubr, ubw, func() { up.Close() }, req, target, h, p.blankValues(secrets), nil)
		if err != nil {
			e.Error = err.Error()
		}
		if !keep {
			return
		}
	}
}
