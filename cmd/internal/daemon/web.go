package daemon

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/kulehq/kule/kernel"
)

//go:embed web
var webFS embed.FS

// webHandler serves the embedded app and, under /api/, the API.
func (d *Daemon) webHandler(api http.Handler) http.Handler {
	sub, _ := fs.Sub(webFS, "web")
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
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

var keyPattern = regexp.MustCompile(`^((Mod|Ctrl|Alt|Shift|Meta)\+){0,4}([A-Za-z0-9]|F[0-9]{1,2}|Enter|Tab|Escape|ArrowUp|ArrowDown|ArrowLeft|ArrowRight|Backspace|Delete|Home|End|PageUp|PageDown|Space|[,./;'\[\]\\=\-` + "`" + `])$`)

var errShortcuts = errors.New("shortcuts.json")

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
		if !keyPattern.MatchString(key) {
			return nil, fmt.Errorf("%w: key %q of %s", errShortcuts, key, id)
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
	b, err := os.ReadFile(d.shortcutsPath())
	if errors.Is(err, os.ErrNotExist) {
		writeJSON(w, 200, map[string]string{})
		return
	}
	if err != nil {
		fail(w, err)
		return
	}
	m, err := ParseShortcuts(b)
	if err != nil {
		fail(w, fmt.Errorf("%w (the defaults apply; fix or delete %s)", err, d.shortcutsPath()))
		return
	}
	writeJSON(w, 200, m)
}

func (d *Daemon) putShortcuts(w http.ResponseWriter, r *http.Request) {
	var raw json.RawMessage
	if err := readBody(r, &raw); err != nil {
		fail(w, err)
		return
	}
	m, err := ParseShortcuts(raw)
	if err != nil {
		fail(w, fmt.Errorf("%w: %w", errBadRequest, err))
		return
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := kernel.WriteFileAtomic(d.shortcutsPath(), append(b, '\n'), 0o600); err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, 200, m)
}
