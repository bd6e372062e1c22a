package daemon

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
)

// devServer is a server an agent could start on 127.0.0.1: it keeps every
// Cookie header a browser sends it.
func devServer(t *testing.T) (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Values("Cookie")...)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<!doctype html><title>dev</title><h1 id=dev>dev server</h1>"))
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), got...) }
}

// TestAppCookieStaysWithTheDaemon logs a real Chromium in by a launch code,
// then opens a server on 127.0.0.1 (another port, as a dev server an agent
// starts): it receives no Kule cookie, and the launch code does not open
// the app twice. With the daemon on 127.0.0.1 (its own loopback address
// taken away), the same server receives the session cookie: the attack.
func TestAppCookieStaysWithTheDaemon(t *testing.T) {
	ctx, shot := browser(t)
	d := startDaemon(t, Config{})
	srv, cookies := devServer(t)
	url := d.URL()
	step(t, ctx, shot, "log in by the launch code",
		chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.CSS(`#btn-new`)))
	step(t, ctx, shot, "open the dev server",
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#dev`)))
	for _, c := range cookies() {
		if strings.Contains(c, cookieName) || strings.Contains(c, d.Token()) {
			t.Fatalf("a server on 127.0.0.1 received the daemon's cookie: %s", c)
		}
	}
	step(t, ctx, shot, "the launch code a second time",
		chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.CSS(`h1`)))
	if h := value(t, ctx, shot, "spent page", textOf(`h1`)); !strings.Contains(h, "used already") {
		t.Fatalf("a launch code used twice shows %q, want the used-already page", h)
	}
	// The app itself still opens with the cookie the first use set.
	step(t, ctx, shot, "the app with its cookie",
		chromedp.Navigate("http://"+d.Addr()+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#btn-new`)))

	// The guard taken away: a daemon on 127.0.0.1 shares its cookie's host
	// with every local server.
	ownLoopback = false
	shared := startDaemon(t, Config{})
	ownLoopback = true
	step(t, ctx, shot, "log in on 127.0.0.1",
		chromedp.Navigate(shared.URL()),
		chromedp.WaitVisible(chromedp.CSS(`#btn-new`)))
	step(t, ctx, shot, "open the dev server again",
		chromedp.Navigate(srv.URL+"/again"),
		chromedp.WaitVisible(chromedp.CSS(`#dev`)))
	leaked := false
	for _, c := range cookies() {
		leaked = leaked || strings.Contains(c, cookieName+"="+shared.Token())
	}
	if !leaked {
		t.Fatalf("with the daemon on 127.0.0.1 the dev server should receive its cookie (the attack); it got %q", cookies())
	}
}
