// Package relpath holds the relative paths Kule stores in journals, checkpoints
// and JSON output. A file name on Linux is any bytes but '/' and NUL, so a path
// need not be UTF-8; encoding/json would silently replace such bytes. Path
// marshals losslessly: a JSON string when it is valid UTF-8, otherwise an
// object {"base64": "..."} holding the exact bytes.
package relpath

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrUnsafe is returned for a path that could leave the folder.
var ErrUnsafe = errors.New("path is not safely relative")

// Path is a slash-separated path relative to a folder root.
type Path string

type encoded struct {
	Base64 string `json:"base64"`
}

// MarshalJSON writes the path as a string, or as {"base64": …} when it is
// not valid UTF-8.
func (p Path) MarshalJSON() ([]byte, error) {
	if utf8.ValidString(string(p)) {
		return json.Marshal(string(p))
	}
	return json.Marshal(encoded{Base64: base64.StdEncoding.EncodeToString([]byte(p))})
}

// UnmarshalJSON reads either form MarshalJSON writes.
func (p *Path) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*p = Path(s)
		return nil
	}
	var e encoded
	if err := json.Unmarshal(b, &e); err != nil {
		return fmt.Errorf("relpath: neither a string nor {\"base64\"}: %w", err)
	}
	raw, err := base64.StdEncoding.DecodeString(e.Base64)
	if err != nil {
		return fmt.Errorf("relpath: %w", err)
	}
	*p = Path(raw)
	return nil
}

// Check reports whether p is a clean relative path that stays inside its root:
// not empty, not absolute, no "." or ".." or empty element, no NUL.
func Check(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || strings.ContainsRune(p, 0) {
		return fmt.Errorf("%w: %q", ErrUnsafe, p)
	}
	for _, el := range strings.Split(p, "/") {
		if el == "" || el == "." || el == ".." {
			return fmt.Errorf("%w: %q", ErrUnsafe, p)
		}
	}
	return nil
}

// Dir is the parent of p, "" at the top.
func Dir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

// Base is the last element of p.
func Base(p string) string {
	return p[strings.LastIndexByte(p, '/')+1:]
}

// Join joins a directory and a name; dir may be "".
func Join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// Under reports whether p is dir itself or lies below it.
func Under(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}
