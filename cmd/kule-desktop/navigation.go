package main

import "net/url"

// What the window does with a page's navigation.
const (
	stayInWindow = 0 // the control room itself
	openBrowser  = 1 // a web page: the person's browser, never this window
	refuse       = 2 // anything else (file:, data:, javascript:, another local port)
)

// sameOriginOnly, when false, lets every http(s) address load inside the
// window (the attack test's knob).
var sameOriginOnly = true

// navigate decides where uri goes. Only the control room's own origin (the
// daemon's scheme, host and port exactly, as "http://127.0.0.1:4321/")
// loads in the window, and only in place: a new window of it opens in the
// browser too. The address is parsed, not matched by prefix, so a look-alike
// ("http://127.0.0.1:43210/", "http://127.0.0.1:4321.evil/") is a foreign
// page. A web page opens in the browser; anything else is refused, since a
// window that holds the daemon's session must not show a local file or run
// a script address.
func navigate(uri, origin string, newWindow bool) int {
	u, err := url.Parse(uri)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return refuse
	}
	if !sameOriginOnly {
		return stayInWindow
	}
	o, err := url.Parse(origin)
	if err == nil && !newWindow && u.User == nil && u.Scheme == o.Scheme && u.Host == o.Host {
		return stayInWindow
	}
	return openBrowser
}
