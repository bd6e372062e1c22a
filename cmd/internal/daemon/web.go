package daemon

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

//go:embed web
var webFS embed.FS

// webFiles are the app's files a daemon serves, read when it starts: the embedded ones. An
// attack test serves a page with one of its guards taken out, to show what the guard keeps out.
var webFiles = func() fs.FS { sub, _ := fs.Sub(webFS, "web"); return sub }

// webHandler serves the embedded app and, under /api/, the API.
func (d *Daemon) webHandler(api http.Handler) http.Handler {
	files := http.FileServerFS(webFiles())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		if strings.HasPrefix(r.URL.Path, "/ext-panel/") {
			d.servePanelFile(w, r) // extensions.go: sandboxed pages with a CSP of their own
			return
		}
		if strings.HasPrefix(r.URL.Path, "/api/") {
			api.ServeHTTP(w, r)
			return
		}
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' blob: data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
		h.Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}

// shortcuts.json: the person's own key bindings, command id → key
// ("Mod+K", "Ctrl+Tab", "Alt+ArrowUp"). Commands absent keep the default.

// Compiled at its first use, like the package's other patterns: every kule
// command starts this binary, and a pattern with counted repetitions costs
// a tenth of a millisecond or more to compile at start.
var keyPattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^((Mod|Ctrl|Alt|Shift|Meta)\+){0,4}([A-Za-z0-9]|F[0-9]{1,2}|Enter|Tab|Escape|ArrowUp|ArrowDown|ArrowLeft|ArrowRight|Backspace|Delete|Home|End|PageUp|PageDown|Space|[,./;'\[\]\\=\-` + "`" + `])$`)
})

var errShortcuts = errors.New("shortcuts.json")

// reservedCombos are the combos a browser or the desktop keeps for itself, with
// what each does: a real browser window never hands them to a page, so a
// shortcut on one would never fire. The page's editor refuses them (app.js
// has the same list); the daemon refuses them too, so a shortcuts.json
// written by hand or by an older page cannot bind one.
var reservedCombos = map[string]string{
	"Mod+W": "closes the tab", "Mod+Shift+W": "closes the window", "Mod+T": "opens a tab", "Mod+Shift+T": "reopens a closed tab",
	"Mod+N": "opens a window", "Mod+Shift+N": "opens a private window", "Mod+Q": "quits the browser", "Mod+Shift+Q": "quits the browser",
	"Ctrl+Tab": "goes to the next tab", "Ctrl+Shift+Tab": "goes to the previous tab", "Mod+PageDown": "goes to the next tab", "Mod+PageUp": "goes to the previous tab",
	"Alt+F4": "closes the window", "Alt+Tab": "switches windows", "F11": "goes full screen", "Ctrl+Alt+Delete": "belongs to the system",
	"Mod+Alt+T": "opens a terminal on many desktops", "Mod+Shift+U": "types a character by its code on Linux desktops",
	"Mod+Alt+ArrowUp": "switches workspaces on Linux desktops", "Mod+Alt+ArrowDown": "switches workspaces on Linux desktops",
	"Mod+H": "hides the app on a Mac", "Mod+M": "minimises the window on a Mac", "Mod+Space": "opens Spotlight on a Mac", "Ctrl+Space": "switches the input language",
}

// checkReserved is the guard on reserved combos; a test turns it off to show
// the binding it keeps out.
var checkReserved = true

// reservedWhy says why key can never reach a page, or "" when it can.
func reservedWhy(key string) string {
	if why, ok := reservedCombos[key]; ok {
		return why
	}
	for _, part := range strings.Split(key, "+") {
		if part == "Meta" {
			return "belongs to the system (the Super key)"
		}
	}
	return ""
}

// ParseShortcuts reads shortcuts.json strictly: command ids of lowercase
// words and dots, keys like Mod+Shift+Enter, no key bound twice.
func ParseShortcuts(b []byte) (map[string]string, error) {
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", errShortcuts, err)
	}
	if len(m) > 200 {
		return nil, fmt.Errorf("%w: too many entries", errShortcuts)
	}
	used := map[string]string{}
	for id, key := range m {
		if len(id) == 0 || len(id) > 60 || strings.Trim(id, "abcdefghijklmnopqrstuvwxyz0123456789.-") != "" {
			return nil, fmt.Errorf("%w: command id %q", errShortcuts, id)
		}
		if key == "" {
			continue // unbound
		}
		if !keyPattern().MatchString(key) {
			return nil, fmt.Errorf("%w: key %q of %s", errShortcuts, key, id)
		}
		if why := reservedWhy(key); why != "" && checkReserved {
			return nil, fmt.Errorf("%w: %s of %s %s, so a page never receives it", errShortcuts, key, id, why)
		}
		if other, ok := used[key]; ok {
			return nil, fmt.Errorf("%w: %s is bound to both %s and %s", errShortcuts, key, other, id)
		}
		used[key] = id
	}
	if m == nil {
		m = map[string]string{}
	}
	return m, nil
}

func (d *Daemon) shortcutsPath() string { return filepath.Join(d.home, "shortcuts.json") }

func (d *Daemon) getShortcuts(w http.ResponseWriter, r *http.Request) {
	getKept(w, d.shortcutsPath(), map[string]string{}, ParseShortcuts, "the defaults apply")
}

func (d *Daemon) putShortcuts(w http.ResponseWriter, r *http.Request) {
	putKept(w, r, d.shortcutsPath(), ParseShortcuts)
}
