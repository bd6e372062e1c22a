package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"

	"github.com/kulehq/kule/kernel"
)

// A kept file is one of the page's settings kept whole as JSON in Kule's
// home (shortcuts.json, themes.json, layout.json): read and written only
// through its parser, so a file edited by hand that does not parse is
// refused with what applies instead, and a bad write keeps nothing.

// getKept answers the file at path as parse reads it, or none when there
// is no file; instead says what applies when it does not parse.
func getKept[T any](w http.ResponseWriter, path string, none T, parse func([]byte) (T, error), instead string) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		writeJSON(w, 200, none)
		return
	}
	if err != nil {
		fail(w, err)
		return
	}
	v, err := parse(b)
	if err != nil {
		fail(w, fmt.Errorf("%w (%s; fix or delete %s)", err, instead, path))
		return
	}
	writeJSON(w, 200, v)
}

// putKept checks the request's body with parse and keeps what it read at
// path, atomically; a body that does not parse keeps nothing.
func putKept[T any](w http.ResponseWriter, r *http.Request, path string, parse func([]byte) (T, error)) {
	var raw json.RawMessage
	if err := readBody(r, &raw); err != nil {
		fail(w, err)
		return
	}
	v, err := parse(raw)
	if err != nil {
		fail(w, fmt.Errorf("%w: %w (nothing was kept)", errBadRequest, err))
		return
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	if err := kernel.WriteFileAtomic(path, append(b, '\n'), 0o600); err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, 200, v)
}
