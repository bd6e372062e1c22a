package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync/atomic"
)

// rawEnds are the TCP connections beneath one plain-HTTP forwarding: the
// client's and the server's. Through them an answer the proxy need not
// look into goes from socket to socket by splice(2), never through the
// proxy's memory: each byte read into user space and written out again
// cost most of a download's CPU through the proxy, which on a loaded
// machine is the download's time.
type rawEnds struct {
	client, up *net.TCPConn
	down       *int64 // the server's bytes read, as the log counts them
	relayed    func(n int64)
}

// newRawEnds gives the raw ends of client and up, nil unless both are TCP
// connections as they are (not wrapped: a wrapper may count or change
// what passes).
func newRawEnds(client, up net.Conn, down *int64, relayed func(int64)) *rawEnds {
	c, ok1 := client.(*net.TCPConn)
	u, ok2 := up.(*net.TCPConn)
	if !ok1 || !ok2 {
		return nil
	}
	return &rawEnds{client: c, up: u, down: down, relayed: relayed}
}

// rawBodyFor puts a rawBody in place of resp's body when the answer may go
// from socket to socket: it has a length (so where it ends is known without
// reading it), nothing is to be blanked out of it (no secret went to its
// host), and it is not the bodiless answer to a HEAD.
func rawBodyFor(ends *rawEnds, ubr *bufio.Reader, req string, resp *http.Response, blankVals [][]byte) {
	if ends == nil || len(blankVals) > 0 || req == http.MethodHead || resp.ContentLength <= 0 ||
		len(resp.TransferEncoding) > 0 || resp.Body == nil || resp.Body == http.NoBody {
		return
	}
	resp.Body = &rawBody{parsed: resp.Body, ends: ends, ubr: ubr}
}

// rawBody is a response body that pieceWriter.ReadFrom relays between
// the raw ends; any other reader reads the parsed body, as before.
type rawBody struct {
	parsed  io.ReadCloser
	ends    *rawEnds
	ubr     *bufio.Reader // the server's reader: it may hold the body's first bytes
	relayed bool          // the body went by relay: parsed is not to be read or drained
}

func (b *rawBody) Read(p []byte) (int, error) {
	if b.relayed {
		return 0, io.EOF
	}
	return b.parsed.Read(p)
}

// Close closes the parsed body unless the body went by relay: closing it
// then would read the body's length again from the server's connection.
func (b *rawBody) Close() error {
	if b.relayed {
		return nil
	}
	return b.parsed.Close()
}

// relay writes n bytes of the body to the client: what the server's reader
// holds already, then the rest from socket to socket. cbw is flushed first,
// so that the answer's head goes before its body.
func (b *rawBody) relay(cbw *bufio.Writer, n int64) (int64, error) {
	if err := cbw.Flush(); err != nil {
		return 0, err
	}
	b.relayed = true
	var total int64
	if k := min(int64(b.ubr.Buffered()), n); k > 0 {
		head, _ := b.ubr.Peek(int(k))
		w, err := b.ends.client.Write(head)
		_, _ = b.ubr.Discard(w) // w ≤ Buffered: cannot fail
		total += int64(w)
		if err != nil {
			return total, err
		}
	}
	m, err := b.ends.client.ReadFrom(io.LimitReader(b.ends.up, n-total))
	atomic.AddInt64(b.ends.down, m)
	total += m
	if b.ends.relayed != nil {
		b.ends.relayed(total)
	}
	if err == nil && total < n {
		err = io.ErrUnexpectedEOF
	}
	return total, err
}
