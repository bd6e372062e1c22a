package daemon

import (
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
)

func TestParseLayout(t *testing.T) {
	tests := map[string]struct {
		in string
		ok bool
	}{
		"empty":                  {`{"version":1,"regions":{}}`, true},
		"panels moved":           {`{"version":1,"regions":{"main":{"panels":["live","review"],"active":"review"},"right":{"panels":["timeline"],"active":"timeline","size":400}}}`, true},
		"bottom hidden":          {`{"version":1,"regions":{"main":{"panels":["live"]},"bottom":{"panels":["terminal"],"hidden":true}}}`, true},
		"main hidden":            {`{"version":1,"regions":{"main":{"panels":["live"],"hidden":true},"bottom":{"panels":["terminal"]}}}`, true},
		"main and bottom gone":   {`{"version":1,"regions":{"main":{"panels":["live"],"hidden":true},"bottom":{"panels":[],"hidden":true}}}`, false},
		"other version":          {`{"version":2,"regions":{}}`, false},
		"unknown region":         {`{"version":1,"regions":{"top":{"panels":[]}}}`, false},
		"unknown field":          {`{"version":1,"regions":{},"colour":"red"}`, false},
		"panel in two":           {`{"version":1,"regions":{"main":{"panels":["live"]},"left":{"panels":["live"]}}}`, false},
		"panel twice":            {`{"version":1,"regions":{"main":{"panels":["live","live"]}}}`, false},
		"shows a panel it lacks": {`{"version":1,"regions":{"main":{"panels":["live"],"active":"review"}}}`, false},
		"markup as an id":        {`{"version":1,"regions":{"main":{"panels":["\"><img src=x onerror=alert(1)>"]}}}`, false},
		"tiny size":              {`{"version":1,"regions":{"left":{"panels":[],"size":3}}}`, false},
		"null region":            {`{"version":1,"regions":{"left":null}}`, false},
		"two values":             {`{"version":1,"regions":{}}{}`, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := ParseLayout([]byte(tc.in))
			if (err == nil) != tc.ok {
				t.Fatalf("ParseLayout(%s) = %v, want ok=%v", tc.in, err, tc.ok)
			}
			if err != nil && !errors.Is(err, errLayout) {
				t.Fatalf("error %v is not errLayout", err)
			}
		})
	}
}

// TestLayoutKeepsAWorkspace: a layout hiding the main area and the bottom
// panel together is refused by the daemon, so no page opens on a window
// with nothing to work in; with the guard off the same layout is kept.
func TestLayoutKeepsAWorkspace(t *testing.T) {
	both := `{"version":1,"regions":{"main":{"panels":["live"],"hidden":true},"bottom":{"panels":["terminal"],"hidden":true}}}`
	d := startDaemon(t, Config{})
	if code, body := call(t, d, http.MethodPut, "/api/layout", both); code != http.StatusBadRequest || !strings.Contains(body, "never") && !strings.Contains(body, "both hidden") {
		t.Fatalf("PUT of a layout hiding main and bottom: %d %s, want 400", code, body)
	}
	if _, err := os.Stat(d.layoutPath()); err == nil {
		t.Fatal("a refused layout was written")
	}
	t.Run("without the guard", func(t *testing.T) {
		keepAWorkspace = false
		defer func() { keepAWorkspace = true }()
		if code, body := call(t, d, http.MethodPut, "/api/layout", both); code != 200 {
			t.Fatalf("with the guard off the layout should be kept (the attack works): %d %s", code, body)
		}
	})
}

// TestLayoutEndpoint: PUT keeps layout.json atomically in Kule's home, GET
// reads it back, DELETE (Reset the layout) removes it, and a broken file
// is refused with what to do rather than half read.
func TestLayoutEndpoint(t *testing.T) {
	d := startDaemon(t, Config{})
	if code, body := call(t, d, http.MethodGet, "/api/layout", ""); code != 200 || !strings.Contains(body, `"regions":{}`) {
		t.Fatalf("GET with no file: %d %s", code, body)
	}
	in := `{"version":1,"regions":{"right":{"panels":["timeline"],"active":"timeline","size":420}}}`
	if code, body := call(t, d, http.MethodPut, "/api/layout", in); code != 200 {
		t.Fatalf("PUT: %d %s", code, body)
	}
	if b := readFile(d.layoutPath()); !strings.Contains(b, `"timeline"`) {
		t.Fatalf("layout.json holds %q", b)
	}
	if code, body := call(t, d, http.MethodGet, "/api/layout", ""); code != 200 || !strings.Contains(body, `"size":420`) {
		t.Fatalf("GET after PUT: %d %s", code, body)
	}
	must(t, os.WriteFile(d.layoutPath(), []byte(`{"version":1,"regions":{"top":{}}}`), 0o600))
	if code, body := call(t, d, http.MethodGet, "/api/layout", ""); code != http.StatusInternalServerError || !strings.Contains(body, "Reset the layout") {
		t.Fatalf("GET of a broken file: %d %s", code, body)
	}
	if code, body := call(t, d, http.MethodDelete, "/api/layout", ""); code != 200 {
		t.Fatalf("DELETE: %d %s", code, body)
	}
	if _, err := os.Stat(d.layoutPath()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("layout.json still there after Reset: %v", err)
	}
}

func FuzzParseLayout(f *testing.F) {
	f.Add([]byte(`{"version":1,"regions":{"main":{"panels":["live","review"],"active":"review"},"bottom":{"panels":["terminal"],"hidden":true,"size":300}}}`))
	f.Add([]byte(`{"version":1,"regions":{"left":{"panels":["tasks"]},"right":{"panels":["chat"],"active":"chat"}}}`))
	f.Add([]byte(`{"version":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := ParseLayout(b)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for name, r := range l.Regions {
			for _, p := range r.Panels {
				if seen[p] || !panelIDPattern().MatchString(p) {
					t.Fatalf("panel %q accepted twice or with an odd id", p)
				}
				seen[p] = true
			}
			if r.Active != "" && !strings.Contains(","+strings.Join(r.Panels, ",")+",", ","+r.Active+",") {
				t.Fatalf("region %s shows %q, not one of its panels", name, r.Active)
			}
		}
		if m, b := l.Regions["main"], l.Regions["bottom"]; m != nil && b != nil && m.Hidden && b.Hidden {
			t.Fatal("main and bottom hidden together were accepted")
		}
	})
}
