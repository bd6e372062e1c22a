package proxy

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// gatewayHost is a chat gateway: a WebSocket server on a secret's host.
const gatewayHost = "gateway.example.test"

// gateway records the text messages it receives and echoes each back.
type gateway struct {
	mu   sync.Mutex
	got  []string
	hdrs []http.Header
}

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	g.hdrs = append(g.hdrs, r.Header.Clone())
	g.mu.Unlock()
	up := websocket.Upgrader{EnableCompression: true}
	c, err := up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer c.Close()
	for {
		typ, b, err := c.ReadMessage()
		if err != nil {
			return
		}
		g.mu.Lock()
		g.got = append(g.got, string(b))
		g.mu.Unlock()
		if err := c.WriteMessage(typ, b); err != nil {
			return
		}
	}
}

func (g *gateway) received() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.got...)
}

// gatewayWorld is the test's internet with a gateway whose bot token is a
// secret placed only in identify's d.token.
func gatewayWorld(t *testing.T, off guard) (*world, *gateway) {
	t.Helper()
	w := newWorld(t)
	g := &gateway{}
	w.serve(t, gatewayHost, true, g)
	w.secret = Secret{Name: "STRIPE_KEY", Value: secretValue, Hosts: []string{gatewayHost}, FramePaths: []string{"d.token"}}
	w.off = off
	w.start(t)
	return w, g
}

func dialGateway(t *testing.T, w *world) *websocket.Conn {
	t.Helper()
	pool := x509.NewCertPool()
	bundle, err := os.ReadFile(w.bundle)
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(bundle)
	pu, _ := url.Parse("http://kule:" + testToken + "@" + w.proxy.Addr())
	d := websocket.Dialer{Proxy: http.ProxyURL(pu), TLSClientConfig: &tls.Config{RootCAs: pool}, EnableCompression: true, HandshakeTimeout: 30 * time.Second}
	c, resp, err := d.Dial("wss://"+gatewayHost+"/?v=10", http.Header{"Authorization": {"Bot " + w.placeholder()}})
	if err != nil {
		t.Fatalf("dial the gateway through the proxy: %v (%+v)", err, resp)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func roundTrip(t *testing.T, c *websocket.Conn, msg string) string {
	t.Helper()
	if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, b, err := c.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestWebSocketThroughInterception: a WebSocket to a secret's host goes
// through the proxy's interception: the upgrade's credential header and
// identify's d.token carry the value to the server, the echo comes back
// blanked, no extension is agreed, and the connection is logged with its
// upgrade and the secret placed.
func TestWebSocketThroughInterception(t *testing.T) {
	t.Parallel()
	w, g := gatewayWorld(t, 0)
	c := dialGateway(t, w)
	ph := w.placeholder()

	echo := roundTrip(t, c, `{"op":2,"d":{"token":"Bot `+ph+`","intents":513}}`)
	got := g.received()
	if len(got) != 1 || !strings.Contains(got[0], `"token":"Bot `+secretValue+`"`) {
		t.Fatalf("the gateway got %q; want identify with the token in d.token", got)
	}
	if strings.Contains(echo, secretValue) || !strings.Contains(echo, "Bot ****") {
		t.Fatalf("the echo reached the client as %q; want the value blanked", echo)
	}
	g.mu.Lock()
	hdr := g.hdrs[0]
	g.mu.Unlock()
	if hdr.Get("Authorization") != "Bot "+secretValue {
		t.Fatalf("the upgrade's Authorization reached the server as %q", hdr.Get("Authorization"))
	}
	if ext := hdr.Get("Sec-WebSocket-Extensions"); ext != "" {
		t.Fatalf("an extension was offered to the server: %q", ext)
	}
	// Binary frames and pings pass as they are.
	if err := c.WriteMessage(websocket.BinaryMessage, []byte{0, 1, 2}); err != nil {
		t.Fatal(err)
	}
	if _, b, err := c.ReadMessage(); err != nil || !bytes.Equal(b, []byte{0, 1, 2}) {
		t.Fatalf("binary echo %v, %v", b, err)
	}
	c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(5*time.Second))
	c.Close()
	e := waitEntry(t, w, gatewayHost)
	if e.WebSockets != 1 || !e.Intercepted || strings.Join(e.Secrets, ",") != "STRIPE_KEY" {
		t.Fatalf("log entry %+v: want one upgrade, intercepted, the secret named", e)
	}
}

// waitEntry polls the proxy's log for the entry of host (written when the
// connection ends).
func waitEntry(t *testing.T, w *world, host string) Entry {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, e := range w.proxy.Entries() {
			if e.Host == host {
				return e
			}
		}
	}
	t.Fatalf("no log entry for %s: %+v", host, w.proxy.Entries())
	return Entry{}
}

// TestWebSocketPlaceholderOnlyAtFramePaths is the attack: a message that
// shows what it carries (a presence's status, a chat message) holds the
// placeholder. With the guard, the server sees the placeholder only; with
// the guard off (replace anywhere in a frame), the bot token would be set
// as the bot's status for everyone to read.
func TestWebSocketPlaceholderOnlyAtFramePaths(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		off  guard
		leak bool
	}{{"guarded", 0, false}, {"guard off", guardFramePaths, true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w, g := gatewayWorld(t, tc.off)
			c := dialGateway(t, w)
			ph := w.placeholder()
			roundTrip(t, c, `{"op":3,"d":{"status":"online","activities":[{"name":"`+ph+`"}]}}`)
			roundTrip(t, c, `{"op":2,"d":{"properties":{"token":"`+ph+`"}}}`)
			roundTrip(t, c, `not json `+ph)
			leaked := strings.Contains(strings.Join(g.received(), "\n"), secretValue)
			if leaked != tc.leak {
				t.Fatalf("the server got %q; leak %v, want %v", g.received(), leaked, tc.leak)
			}
		})
	}
}

// TestWebSocketFrameRoundTrip: frames are read by RFC 6455's
// rules: what is written reads back, what breaks them is refused.
func TestWebSocketFrameRoundTrip(t *testing.T) {
	t.Parallel()
	for _, f := range []wsFrame{
		{fin: true, op: wsText, payload: []byte("hi")},
		{fin: false, op: wsBinary, payload: bytes.Repeat([]byte{7}, 300)},
		{fin: true, op: wsBinary, payload: bytes.Repeat([]byte{9}, 70000)},
		{fin: true, op: wsPing},
	} {
		for _, mask := range []bool{false, true} {
			var b bytes.Buffer
			if err := writeFrame(&b, f, mask); err != nil {
				t.Fatal(err)
			}
			got, err := readFrame(bufio.NewReader(&b), maxServerFrame)
			if err != nil {
				t.Fatal(err)
			}
			if got.fin != f.fin || got.op != f.op || got.masked != mask || !bytes.Equal(got.payload, f.payload) {
				t.Fatalf("frame %+v came back as %+v", f, got)
			}
		}
	}
	for name, raw := range map[string][]byte{
		"reserved bit":      {0xC1, 0x00},
		"unknown opcode":    {0x83, 0x00},
		"long ping":         {0x89, 126, 0, 200},
		"fragmented close":  {0x08, 0x00},
		"too long":          {0x82, 127, 0, 0, 0, 0, 0x10, 0, 0, 0},
		"cut short payload": {0x81, 0x05, 'a'},
	} {
		if _, err := readFrame(bytes.NewReader(raw), maxClientFrame); err == nil {
			t.Errorf("%s: read without error", name)
		}
	}
}

// FuzzWebSocketFrame: whatever bytes arrive, a frame read is written back to
// the same frame, and nothing panics.
func FuzzWebSocketFrame(f *testing.F) {
	f.Add([]byte{0x81, 0x82, 1, 2, 3, 4, 'h' ^ 1, 'i' ^ 2})
	f.Add([]byte{0x82, 126, 0, 3, 1, 2, 3})
	f.Add([]byte{0x88, 0x02, 0x03, 0xe8})
	f.Add([]byte{0x01, 0x01, 'a', 0x80, 0x01, 'b'})
	f.Fuzz(func(t *testing.T, raw []byte) {
		fr, err := readFrame(bytes.NewReader(raw), 1<<16)
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := writeFrame(&b, fr, fr.masked); err != nil {
			t.Fatal(err)
		}
		again, err := readFrame(&b, 1<<16)
		if err != nil {
			t.Fatalf("a frame written back does not read: %v", err)
		}
		if again.fin != fr.fin || again.op != fr.op || !bytes.Equal(again.payload, fr.payload) {
			t.Fatalf("%+v came back as %+v", fr, again)
		}
	})
}

// TestWebSocketRefusesUnaskedExtension: the proxy offers the server no
// extension; a server that agrees to permessage-deflate anyway (its frames
// would hide their text from the proxy) is refused, and the client never
// gets an upgraded connection.
func TestWebSocketRefusesUnaskedExtension(t *testing.T) {
	t.Parallel()
	for _, off := range []guard{0, guardWSExtensions} {
		t.Run(fmt.Sprintf("off=%d", off), func(t *testing.T) {
			t.Parallel()
			unaskedExtension(t, off)
		})
	}
}

// unaskedExtension dials a server that agrees to permessage-deflate; with
// the guard off the client gets a connection whose frames the proxy
// cannot read.
func unaskedExtension(t *testing.T, off guard) {
	w := newWorld(t)
	w.off = off
	w.serve(t, gatewayHost, true, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		hj, ok := rw.(http.Hijacker)
		if !ok {
			return
		}
		c, buf, err := hj.Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		sum := sha1.Sum([]byte(r.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
		buf.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + base64.StdEncoding.EncodeToString(sum[:]) + "\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n")
		buf.Flush()
		io.Copy(io.Discard, c)
	}))
	w.secret = Secret{Name: "STRIPE_KEY", Value: secretValue, Hosts: []string{gatewayHost}, FramePaths: []string{"d.token"}}
	w.start(t)
	pool := x509.NewCertPool()
	bundle, _ := os.ReadFile(w.bundle)
	pool.AppendCertsFromPEM(bundle)
	pu, _ := url.Parse("http://kule:" + testToken + "@" + w.proxy.Addr())
	d := websocket.Dialer{Proxy: http.ProxyURL(pu), TLSClientConfig: &tls.Config{RootCAs: pool}, HandshakeTimeout: 30 * time.Second}
	c, resp, err := d.Dial("wss://"+gatewayHost+"/", nil)
	if off != 0 {
		if err != nil {
			t.Fatalf("with the guard off the upgrade did not pass either: %v", err)
		}
		c.Close()
		return
	}
	if err == nil {
		c.Close()
		t.Fatal("the upgrade passed with an extension no one asked for")
	}
	if resp == nil || resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("answer %+v, %v; want 502", resp, err)
	}
	if e := waitEntry(t, w, gatewayHost); e.WebSockets != 0 || !strings.Contains(e.Error, "extension") {
		t.Fatalf("log entry %+v: want no upgrade and the extension named", e)
	}
}
