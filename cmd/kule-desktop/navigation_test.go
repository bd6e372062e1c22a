package main

import (
	"strings"
	"testing"
)

// TestNavigationLeavesTheWindow: a page in the window can load the control
// room's own addresses only; look-alike origins, other local ports and web
// pages go to the browser, and local files and script addresses nowhere.
// With the guard taken away, every attack loads inside the window.
func TestNavigationLeavesTheWindow(t *testing.T) {
	const origin = "http://127.0.0.1:4321/"
	cases := []struct {
		uri       string
		newWindow bool
		want      int
	}{
		{"http://127.0.0.1:4321/", false, stayInWindow},
		{"http://127.0.0.1:4321/#task=ab12cd34", false, stayInWindow},
		{"http://127.0.0.1:4321/", true, openBrowser},          // a new window of the app: the browser
		{"http://127.0.0.1:43210/", false, openBrowser},        // another local port: prefix of the origin
		{"http://127.0.0.1:4321.evil.example/", false, refuse}, // a look-alike host: not even an address
		{"http://me@127.0.0.1:4321/", false, openBrowser},      // user info before the host
		{"https://127.0.0.1:4321/", false, openBrowser},        // another scheme
		{"https://example.com/docs", false, openBrowser},
		{"file:///etc/passwd", false, refuse},
		{"javascript:alert(1)", false, refuse},
		{"data:text/html,<script>1</script>", false, refuse},
		{"about:blank", false, refuse},
		{"", false, refuse},
	}
	attacks := 0
	for _, c := range cases {
		if got := navigate(c.uri, origin, c.newWindow); got != c.want {
			t.Errorf("navigate(%q, new window %v) = %d, want %d", c.uri, c.newWindow, got, c.want)
		}
	}
	sameOriginOnly = false
	defer func() { sameOriginOnly = true }()
	for _, c := range cases {
		if c.want == openBrowser && navigate(c.uri, origin, c.newWindow) == stayInWindow {
			attacks++
		}
	}
	if attacks < 5 {
		t.Errorf("with the guard taken away only %d foreign pages load in the window; the test shows nothing", attacks)
	}
}

func FuzzNavigate(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:4321/", "http://127.0.0.1:43210/", "file:///x", "http://[::1]:4321/", "http://%zz/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		if navigate(uri, "http://127.0.0.1:4321/", false) == stayInWindow {
			if p := "http://127.0.0.1:4321"; len(uri) < len(p) || !strings.EqualFold(uri[:len(p)], p) {
				t.Fatalf("%q loads in the window", uri)
			}
		}
	})
}
