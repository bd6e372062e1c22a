package homelayer

import (
	"os"
	"path/filepath"
	"testing"
)

// Ready fails exactly where Changes does, without reading the layer's
// files: a built layer is ready, one with no record or a damaged record or
// no directory is not.
func TestReadyAgreesWithChanges(t *testing.T) {
	t.Parallel()
	_, layer, _ := setup(t)
	cases := map[string]func(l Layer) Layer{
		"built":        func(l Layer) Layer { return l },
		"no record":    func(l Layer) Layer { l.Record += ".missing"; return l },
		"no directory": func(l Layer) Layer { l.Dir += ".missing"; return l },
		"damaged record": func(l Layer) Layer {
			r := filepath.Join(t.TempDir(), "r.json")
			os.WriteFile(r, []byte("{"), 0o600)
			l.Record = r
			return l
		},
	}
	for name, mk := range cases {
		l := mk(layer)
		_, cerr := Changes(l)
		rerr := Ready(l)
		if (cerr == nil) != (rerr == nil) {
			t.Errorf("%s: Changes says %v, Ready says %v", name, cerr, rerr)
		}
		if name == "built" && rerr != nil {
			t.Errorf("a built layer is not ready: %v", rerr)
		}
	}
}
