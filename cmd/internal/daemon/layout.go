package daemon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sync"
)

// layout.json: where the control room's panels are. Four regions — left,
// main, right, bottom — each with the panels it holds as tabs (in order),
// the one shown, whether the region is hidden and its size in pixels (the
// width of a side, the height of the bottom; 0 for the page's default).
// Panels the file does not name go to their own default region, so a panel
// an extension adds later still shows.

// Layout is the parsed layout.json.
type Layout struct {
	Version int                      `json:"version"`
	Regions map[string]*LayoutRegion `json:"regions"`
}

// LayoutRegion is one region of the window.
type LayoutRegion struct {
	Panels []string `json:"panels"`
	Active string   `json:"active,omitempty"`
	Hidden bool     `json:"hidden,omitempty"`
	Size   int      `json:"size,omitempty"`
}

// LayoutRegions are the regions, in the order the page draws them.
var LayoutRegions = []string{"left", "main", "right", "bottom"}

var (
	errLayout       = errors.New("layout.json")
	panelIDPattern  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9-]{0,79}$`) })
	maxLayoutPanels = 64
)

// keepAWorkspace is the guard that the main area and the bottom panel are
// never hidden together: a layout hiding both would leave the window with
// nothing to work in, and every later page would open on it. A test turns
// it off to show what it prevents.
var keepAWorkspace = true

// ParseLayout reads layout.json strictly: version 1, known regions only,
// panel ids of lower-case words, no panel in two regions or twice in one,
// the shown panel one of the region's, sizes 0 or 120–4000 px, and never
// main and bottom hidden together.
func ParseLayout(b []byte) (Layout, error) {
	var l Layout
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return Layout{}, fmt.Errorf("%w: %v", errLayout, err)
	}
	if dec.More() {
		return Layout{}, fmt.Errorf("%w: more than one JSON value", errLayout)
	}
	if l.Version != 1 {
		return Layout{}, fmt.Errorf("%w: version %d (this Kule reads version 1)", errLayout, l.Version)
	}
	seen := map[string]string{}
	for name, r := range l.Regions {
		known := false
		for _, k := range LayoutRegions {
			known = known || k == name
		}
		if !known {
			return Layout{}, fmt.Errorf("%w: region %q (regions are left, main, right, bottom)", errLayout, name)
		}
		if r == nil {
			return Layout{}, fmt.Errorf("%w: region %s is null", errLayout, name)
		}
		if len(r.Panels) > maxLayoutPanels {
			return Layout{}, fmt.Errorf("%w: region %s holds more than %d panels", errLayout, name, maxLayoutPanels)
		}
		for _, p := range r.Panels {
			if !panelIDPattern().MatchString(p) {
				return Layout{}, fmt.Errorf("%w: panel id %q in %s", errLayout, p, name)
			}
			if other, ok := seen[p]; ok {
				return Layout{}, fmt.Errorf("%w: panel %s is in both %s and %s", errLayout, p, other, name)
			}
			seen[p] = name
		}
		if r.Active != "" && seen[r.Active] != name {
			return Layout{}, fmt.Errorf("%w: region %s shows %q, which it does not hold", errLayout, name, r.Active)
		}
		if r.Size != 0 && (r.Size < 120 || r.Size > 4000) {
			return Layout{}, fmt.Errorf("%w: size %d of %s (0, or 120 to 4000 pixels)", errLayout, r.Size, name)
		}
		if r.Panels == nil {
			r.Panels = []string{}
		}
	}
	if keepAWorkspace {
		if m, b := l.Regions["main"], l.Regions["bottom"]; m != nil && b != nil && m.Hidden && b.Hidden {
			return Layout{}, fmt.Errorf("%w: the main area and the bottom panel are both hidden (one of them always shows)", errLayout)
		}
	}
	if l.Regions == nil {
		l.Regions = map[string]*LayoutRegion{}
	}
	return l, nil
}

func (d *Daemon) layoutPath() string { return filepath.Join(d.home, "layout.json") }

// getLayout answers the kept layout, or {"version":1,"regions":{}} when
// there is none (the page's defaults). A file that does not parse is
// refused with what to do: the page falls back to its defaults.
func (d *Daemon) getLayout(w http.ResponseWriter, r *http.Request) {
	getKept(w, d.layoutPath(), Layout{Version: 1, Regions: map[string]*LayoutRegion{}}, ParseLayout, "the default layout applies; Reset the layout")
}

func (d *Daemon) putLayout(w http.ResponseWriter, r *http.Request) {
	putKept(w, r, d.layoutPath(), ParseLayout)
}

// deleteLayout is Reset the layout: the file goes, the defaults apply.
func (d *Daemon) deleteLayout(w http.ResponseWriter, r *http.Request) {
	if err := os.Remove(d.layoutPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		fail(w, err)
		return
	}
	writeJSON(w, 200, Layout{Version: 1, Regions: map[string]*LayoutRegion{}})
}

func (d *Daemon) layoutRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /api/layout", d.getLayout)
	m.HandleFunc("PUT /api/layout", d.putLayout)
	m.HandleFunc("DELETE /api/layout", d.deleteLayout)
}
