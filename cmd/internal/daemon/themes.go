package daemon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
)

// themes.json in Kule's home: the theme the app shows, whether it moves (Motion), and the
// person's own themes. Kept by the daemon, not in the browser's storage, so every browser
// and profile of the person's shows the same. An own theme is a base theme with colours for
// named parts only, each #rrggbb; a .kule-theme.json file (export, import) holds one own theme
// in the same form, checked by the same parser.

// Themes the app has.
var builtinThemes = []string{"system", "light", "dark", "coral", "nord", "solarized-light", "contrast", "contrast-light"}

// themeParts are the named parts a theme colours (the app's CSS custom properties).
var themeParts = []string{"bg", "panel", "panel2", "line", "text", "muted", "accent", "accent-text", "ok", "ask", "danger", "add", "mod", "del", "mov", "focus"}

var (
	errThemes  = errors.New("themes.json")
	colourRe   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^#[0-9a-fA-F]{6}$`) })
	themeIDRe  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^own-[a-z0-9][a-z0-9-]{0,40}$`) })
	maxOwn     = 40
	maxNameLen = 60
)

// OwnTheme is a theme the person made from a base.
type OwnTheme struct {
	ID      string            `json:"id"`   // own-…, the name the app uses for it
	Name    string            `json:"name"` // as the person named it
	Base    string            `json:"base"` // one of the built-in themes but system
	Colours map[string]string `json:"colours"`
}

// ThemeSettings is themes.json.
type ThemeSettings struct {
	Theme  string     `json:"theme"`  // a built-in theme or an own theme's id
	Motion string     `json:"motion"` // system, on or off
	Own    []OwnTheme `json:"own"`
}

// checkOwn checks one own theme.
func checkOwn(o OwnTheme) error {
	if !themeIDRe().MatchString(o.ID) {
		return fmt.Errorf("%w: own theme id %q (own- and lower-case words)", errThemes, o.ID)
	}
	if o.Name == "" || len([]rune(o.Name)) > maxNameLen {
		return fmt.Errorf("%w: own theme %s needs a name of 1 to %d characters", errThemes, o.ID, maxNameLen)
	}
	if o.Base == "system" || !slices.Contains(builtinThemes, o.Base) {
		return fmt.Errorf("%w: own theme %s is based on %q, not one of the named themes", errThemes, o.ID, o.Base)
	}
	for part, c := range o.Colours {
		if !slices.Contains(themeParts, part) {
			return fmt.Errorf("%w: own theme %s colours %q, which is not a part a theme colours", errThemes, o.ID, part)
		}
		if !colourRe().MatchString(c) {
			return fmt.Errorf("%w: own theme %s: %s is %q, not a colour like #1d2430", errThemes, o.ID, part, c)
		}
	}
	return nil
}

// ParseThemes reads themes.json strictly: unknown fields, unknown themes or parts, and colours
// other than #rrggbb are refused.
func ParseThemes(b []byte) (ThemeSettings, error) {
	var s ThemeSettings
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return ThemeSettings{}, fmt.Errorf("%w: %v", errThemes, err)
	}
	if dec.More() {
		return ThemeSettings{}, fmt.Errorf("%w: more than one JSON value", errThemes)
	}
	if s.Motion == "" {
		s.Motion = "system"
	}
	if !slices.Contains([]string{"system", "on", "off"}, s.Motion) {
		return ThemeSettings{}, fmt.Errorf("%w: motion %q (system, on or off)", errThemes, s.Motion)
	}
	if len(s.Own) > maxOwn {
		return ThemeSettings{}, fmt.Errorf("%w: more than %d own themes", errThemes, maxOwn)
	}
	seen := map[string]bool{}
	for _, o := range s.Own {
		if err := checkOwn(o); err != nil {
			return ThemeSettings{}, err
		}
		if seen[o.ID] {
			return ThemeSettings{}, fmt.Errorf("%w: own theme %s twice", errThemes, o.ID)
		}
		seen[o.ID] = true
	}
	if s.Theme == "" {
		s.Theme = "system"
	}
	if !slices.Contains(builtinThemes, s.Theme) && !seen[s.Theme] {
		return ThemeSettings{}, fmt.Errorf("%w: theme %q is neither a named theme nor one of the own", errThemes, s.Theme)
	}
	if s.Own == nil {
		s.Own = []OwnTheme{}
	}
	return s, nil
}

func (d *Daemon) themesPath() string { return filepath.Join(d.home, "themes.json") }

func (d *Daemon) getThemes(w http.ResponseWriter, r *http.Request) {
	getKept(w, d.themesPath(), ThemeSettings{Theme: "system", Motion: "system", Own: []OwnTheme{}}, ParseThemes, "the System theme applies")
}

func (d *Daemon) putThemes(w http.ResponseWriter, r *http.Request) {
	putKept(w, r, d.themesPath(), ParseThemes)
}

// checkThemeFile checks an imported .kule-theme.json (one own theme) before the app shows it.
func (d *Daemon) checkThemeFile(w http.ResponseWriter, r *http.Request) {
	var o OwnTheme
	if err := readBody(r, &o); err != nil {
		fail(w, fmt.Errorf("%w (a .kule-theme.json holds id, name, base and colours; nothing was imported)", err))
		return
	}
	if err := checkOwn(o); err != nil {
		fail(w, fmt.Errorf("%w: %w (nothing was imported)", errBadRequest, err))
		return
	}
	writeJSON(w, 200, o)
}

// themeRoutes adds the themes' endpoints to the API.
func (d *Daemon) themeRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /api/themes", d.getThemes)
	m.HandleFunc("PUT /api/themes", d.putThemes)
	m.HandleFunc("POST /api/themes/check", d.checkThemeFile)
}
