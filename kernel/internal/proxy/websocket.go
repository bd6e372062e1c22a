package proxy

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/kulehq/kule/kernel/internal/proxy/framing"
)

// WebSocket upgrades on intercepted hosts (a secret's hosts). A connection
// to any other host is a byte tunnel and carries a WebSocket like anything
// else; on a secret's host the proxy reads the upgrade request like every
// request (the secret goes into its credential headers), relays the
// server's 101, and then reads the frames both ways:
//
//   - client to server: a text message is searched for placeholders. A
//     secret's placeholder is replaced only where the secret's FramePaths
//     name a place in a JSON message ("d.token": Discord's identify and
//     resume carry the bot token there), never elsewhere: a presence, a
//     message or any other field holding the placeholder goes on with the
//     placeholder, so the server never sees the value where it would show
//     or echo it. Every frame is masked again with a fresh key.
//   - server to client: every frame's payload is blanked of the secrets'
//     values (uncompressed payloads; an answer the server compresses inside
//     a binary frame is not opened).
//
// Extensions are not offered to the server (Sec-WebSocket-Extensions is
// dropped), so no frame is compressed by permessage-deflate, which would
// hide its text; a server that answers with one is refused. The connection
// is logged like any other: its entry counts the upgrades and names the
// secrets placed in frames.

// Limits of one relayed frame.
const (
	maxClientFrame = 1 << 20  // what a chat client sends: identify, heartbeats
	maxServerFrame = 64 << 20 // what a server sends (a guild's state, a file)
)

// WebSocket opcodes.
const (
	wsContinuation = 0x0
	wsText         = 0x1
	wsBinary       = 0x2
	wsClose        = 0x8
	wsPing         = 0x9
	wsPong         = 0xA
)

// errFrame: a WebSocket frame that breaks RFC 6455 (or the proxy's limits).
var errFrame = errors.New("proxy: websocket frame")

// wsFrame is one frame, unmasked.
type wsFrame struct {
	fin     bool
	op      byte
	masked  bool
	payload []byte
}

// readFrame reads one frame of at most max bytes of payload. Reserved bits
// must be zero (no extension was agreed), control frames short and whole.
func readFrame(r io.Reader, max int64) (wsFrame, error) {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return wsFrame{}, err
	}
	f := wsFrame{fin: h[0]&0x80 != 0, op: h[0] & 0x0f, masked: h[1]&0x80 != 0}
	if h[0]&0x70 != 0 {
		return wsFrame{}, fmt.Errorf("%w: reserved bits set (no extension was agreed)", errFrame)
	}
	switch f.op {
	case wsContinuation, wsText, wsBinary, wsClose, wsPing, wsPong:
	default:
		return wsFrame{}, fmt.Errorf("%w: unknown opcode %#x", errFrame, f.op)
	}
	n := int64(h[1] & 0x7f)
	switch n {
	case 126:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return wsFrame{}, unexpected(err)
		}
		n = int64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return wsFrame{}, unexpected(err)
		}
		u := binary.BigEndian.Uint64(b[:])
		if u > 1<<62 {
			return wsFrame{}, fmt.Errorf("%w: length %d", errFrame, u)
		}
		n = int64(u)
	}
	if f.op >= wsClose && (n > 125 || !f.fin) {
		return wsFrame{}, fmt.Errorf("%w: a control frame must be whole and at most 125 bytes", errFrame)
	}
	if n > max {
		return wsFrame{}, fmt.Errorf("%w: %d bytes, more than the %d the proxy relays in one frame", errFrame, n, max)
	}
	var key [4]byte
	if f.masked {
		if _, err := io.ReadFull(r, key[:]); err != nil {
			return wsFrame{}, unexpected(err)
		}
	}
	f.payload = make([]byte, n)
	if _, err := io.ReadFull(r, f.payload); err != nil {
		return wsFrame{}, unexpected(err)
	}
	if f.masked {
		maskBytes(f.payload, key)
	}
	return f, nil
}

func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

func maskBytes(b []byte, key [4]byte) {
	for i := range b {
		b[i] ^= key[i&3]
	}
}

// writeFrame writes f, masked with a fresh key when mask is set (every frame
// a client sends), as one write.
func writeFrame(w io.Writer, f wsFrame, mask bool) error {
	var b bytes.Buffer
	first := f.op
	if f.fin {
		first |= 0x80
	}
	b.WriteByte(first)
	m := byte(0)
	if mask {
		m = 0x80
	}
	n := len(f.payload)
	switch {
	case n < 126:
		b.WriteByte(m | byte(n))
	case n <= 0xffff:
		b.WriteByte(m | 126)
		b.Write(binary.BigEndian.AppendUint16(nil, uint16(n)))
	default:
		b.WriteByte(m | 127)
		b.Write(binary.BigEndian.AppendUint64(nil, uint64(n)))
	}
	payload := f.payload
	if mask {
		var key [4]byte
		if _, err := rand.Read(key[:]); err != nil {
			return err
		}
		b.Write(key[:])
		payload = append([]byte(nil), payload...)
		maskBytes(payload, key)
	}
	b.Write(payload)
	_, err := w.Write(b.Bytes())
	return err
}

// isWebSocket reports whether req asks to upgrade to a WebSocket.
func isWebSocket(req *framing.Request) bool {
	up, _ := req.Header.Get("Upgrade")
	conn, _ := req.Header.Get("Connection")
	if req.Method != http.MethodGet || !strings.EqualFold(strings.TrimSpace(up), "websocket") {
		return false
	}
	for _, t := range strings.Split(conn, ",") {
		if strings.EqualFold(strings.TrimSpace(t), "upgrade") {
			return true
		}
	}
	return false
}

// webSocket relays an upgrade request on an intercepted connection and, once
// the server switched protocols, the frames both ways until either side
// ends. h is the request's header with the secrets already in place. The
// client connection ends with it.
func (p *Proxy) webSocket(cbr *bufio.Reader, cbw *bufio.Writer, ubr *bufio.Reader, ubw *bufio.Writer, abort, endClient func(), req *framing.Request, target string, h framing.Header, secrets []*Secret, e *Entry) error {
	if req.Chunked || req.ContentLength > 0 {
		writeError(cbw, http.StatusBadRequest, "a WebSocket upgrade carries no body")
		return errors.New("websocket: upgrade with a body")
	}
	h = h.Del("Sec-WebSocket-Extensions")
	if err := framing.WriteHead(ubw, req.Method, target, h, false, 0,
		framing.Field{Name: "Connection", Value: "Upgrade"}, framing.Field{Name: "Upgrade", Value: "websocket"}); err != nil {
		return err
	}
	if err := ubw.Flush(); err != nil {
		return err
	}
	blankVals := p.blankValues(secrets)
	resp, err := http.ReadResponse(ubr, &http.Request{Method: req.Method})
	if err != nil {
		writeError(cbw, http.StatusBadGateway, "the server's answer could not be read: "+blankString(err.Error(), blankVals))
		return errors.New("websocket: upstream response")
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		// Refused by the server: its answer goes back like any other.
		defer resp.Body.Close()
		if len(blankVals) > 0 {
			if reason := p.blankResponse(resp, blankVals); reason != "" {
				writeError(cbw, http.StatusBadGateway, "the server's answer was withheld: "+reason)
				return errors.New("answer withheld: " + reason)
			}
		}
		resp.Close = true
		return writeAnswer(cbw, resp)
	}
	if ext := resp.Header.Get("Sec-WebSocket-Extensions"); ext != "" && p.on(guardWSExtensions) {
		writeError(cbw, http.StatusBadGateway, "the server agreed to a WebSocket extension ("+ext+") no one asked for; its frames could not be read")
		return errors.New("websocket: unasked extension " + ext)
	}
	e.WebSockets++
	// The 101 goes back with the fields the handshake needs, and no others
	// the server chose to add.
	var head strings.Builder
	head.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n")
	for _, k := range []string{"Sec-WebSocket-Accept", "Sec-WebSocket-Protocol"} {
		if v := resp.Header.Get(k); v != "" {
			head.WriteString(k + ": " + blankString(v, blankVals) + "\r\n")
		}
	}
	head.WriteString("\r\n")
	if _, err := cbw.WriteString(head.String()); err != nil {
		return err
	}
	if err := cbw.Flush(); err != nil {
		return err
	}
	var (
		wg    sync.WaitGroup
		upErr error
		mu    sync.Mutex
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer abort() // the client is done: so is the server's side
		upErr = p.clientFrames(cbr, ubw, secrets, func(names []string) {
			mu.Lock()
			defer mu.Unlock()
			for _, n := range names {
				if !slices.Contains(e.Secrets, n) {
					e.Secrets = append(e.Secrets, n)
				}
			}
		})
	}()
	downErr := serverFrames(ubr, cbw, blankVals)
	endClient() // the server is done: so is the client's side
	abort()
	wg.Wait()
	// Only a broken frame is worth the log: the other end's close shows as
	// an error of the side still reading.
	if errors.Is(upErr, errFrame) {
		return fmt.Errorf("websocket: from the client: %w", upErr)
	}
	if errors.Is(downErr, errFrame) {
		return fmt.Errorf("websocket: from the server: %w", downErr)
	}
	return nil
}

// clientFrames relays the client's frames to the server, with the secrets
// placed where their FramePaths allow. A fragmented text message is put
// together first (a placeholder must not hide across two frames).
func (p *Proxy) clientFrames(r *bufio.Reader, w *bufio.Writer, secrets []*Secret, placed func([]string)) error {
	var msg []byte
	var collecting bool
	for {
		f, err := readFrame(r, maxClientFrame)
		if err != nil {
			return err
		}
		if !f.masked {
			return fmt.Errorf("%w: a client's frame must be masked", errFrame)
		}
		switch {
		case f.op == wsText && !f.fin:
			collecting, msg = true, append(msg[:0], f.payload...)
			continue
		case f.op == wsContinuation && collecting:
			if int64(len(msg)+len(f.payload)) > maxClientFrame {
				return fmt.Errorf("%w: a text message longer than %d bytes", errFrame, maxClientFrame)
			}
			msg = append(msg, f.payload...)
			if !f.fin {
				continue
			}
			collecting = false
			f = wsFrame{fin: true, op: wsText, payload: msg}
		}
		if f.op == wsText && len(secrets) > 0 {
			var names []string
			f.payload, names = p.placeInFrame(f.payload, secrets)
			placed(names)
		}
		if err := writeFrame(w, f, true); err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
		if f.op == wsClose {
			return io.EOF
		}
	}
}

// serverFrames relays the server's frames to the client, blanked.
func serverFrames(r *bufio.Reader, w *bufio.Writer, blankVals [][]byte) error {
	for {
		f, err := readFrame(r, maxServerFrame)
		if err != nil {
			return err
		}
		if f.masked {
			return fmt.Errorf("%w: a server's frame must not be masked", errFrame)
		}
		blank(f.payload, blankVals)
		if err := writeFrame(w, f, false); err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
		if f.op == wsClose {
			return io.EOF
		}
	}
}

// placeInFrame puts the secrets' values into a text message where their
// FramePaths allow: the message must be one JSON object, and the string at
// the path holds the placeholder (after a scheme word, as "Bot …"). Any
// other placeholder in the message stays a placeholder.
func (p *Proxy) placeInFrame(payload []byte, secrets []*Secret) ([]byte, []string) {
	if !bytes.Contains(payload, []byte(PlaceholderPrefix)) {
		return payload, nil
	}
	if !p.on(guardFramePaths) {
		s, names := replacePlaceholders(string(payload), secrets)
		return []byte(s), names
	}
	var msg map[string]any
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	if err := dec.Decode(&msg); err != nil || dec.More() {
		return payload, nil
	}
	var names []string
	for _, s := range secrets {
		for _, path := range s.FramePaths {
			parent, key, ok := lookupPath(msg, path)
			if !ok {
				continue
			}
			v, ok := parent[key].(string)
			if !ok || !strings.Contains(v, s.Placeholder) {
				continue
			}
			nv, used := replacePlaceholders(v, []*Secret{s})
			parent[key] = nv
			names = append(names, used...)
		}
	}
	if len(names) == 0 {
		return payload, nil
	}
	out, err := json.Marshal(msg)
	if err != nil {
		return payload, nil
	}
	return out, names
}

// lookupPath finds the object holding the last key of a dotted path.
func lookupPath(msg map[string]any, path string) (map[string]any, string, bool) {
	parts := strings.Split(path, ".")
	cur := msg
	for _, k := range parts[:len(parts)-1] {
		next, ok := cur[k].(map[string]any)
		if !ok {
			return nil, "", false
		}
		cur = next
	}
	last := parts[len(parts)-1]
	_, ok := cur[last]
	return cur, last, ok
}
