// Package dotenv masks secrets in a task's settings files (.env, .env.local,
// *.env, .envrc; not .env.example and its kin): values that look like secrets
// by their name (KEY, TOKEN, SECRET, PASSWORD, …) or by their shape (known
// prefixes such as sk_live_, ghp_, AKIA; long high-entropy strings; URLs
// with a password) are replaced in the copy with placeholders, and the real
// values are kept in the task's sealed secrets.json (a Vault). A commit puts
// them back into a settings file the agent changed (Unmask), keeping the
// agent's other edits.
//
// When the kernel calls what:
//   - a new task: Mask(copy) and Mask(base) with the same Vault (the same
//     value gets the same placeholder, so the two stay equal and no effect is
//     seen), then Vault.Save;
//   - after commit, rollback and undo, and before every run: Mask(copy) (and
//     base when it was rewritten), then Vault.Save;
//   - at commit, for each file written to the real folder: Unmask.
package dotenv

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/kulehq/kule/kernel/internal/atomicfile"
	"github.com/kulehq/kule/kernel/internal/lazyre"
	"github.com/kulehq/kule/kernel/internal/secrets"
)

// Errors a caller can test for.
var (
	ErrVaultDamaged = errors.New("dotenv: the task's secrets.json is damaged")
)

// PlaceholderPrefix starts every placeholder (the same scheme as the proxy's).
const PlaceholderPrefix = "kule-secret-"

// IsDotenv reports whether a file name is a settings file whose values are
// masked: .env, .env.<anything> (but .env.example, .env.sample,
// .env.template, .env.dist), <name>.env, and .envrc.
func IsDotenv(name string) bool {
	base := filepath.Base(name)
	switch {
	case base == ".env" || base == ".envrc":
		return true
	case strings.HasPrefix(base, ".env."):
		switch strings.ToLower(strings.TrimPrefix(base, ".env.")) {
		case "example", "sample", "template", "dist", "defaults":
			return false
		}
		return true
	case strings.HasSuffix(base, ".env") && len(base) > len(".env"):
		return true
	}
	return false
}

// Assignment is one KEY=value in a settings file; Start:End is the value's
// raw text (inside its quotes, if any).
type Assignment struct {
	Key        string
	Start, End int
	Quote      byte // '"', '\'', '`' or 0
}

var keyRe = lazyre.New(`^[A-Za-z_][A-Za-z0-9_.\-]*`)

// Parse finds the assignments of a settings file. It never fails: a line it
// cannot read is left alone.
func Parse(b []byte) []Assignment {
	var out []Assignment
	i := 0
	for i < len(b) {
		lineEnd := bytes.IndexByte(b[i:], '\n')
		if lineEnd < 0 {
			lineEnd = len(b)
		} else {
			lineEnd += i
		}
		next := lineEnd + 1
		j := skipSpace(b, i, lineEnd)
		if j < lineEnd && b[j] != '#' {
			if bytes.HasPrefix(b[j:lineEnd], []byte("export ")) {
				j = skipSpace(b, j+len("export "), lineEnd)
			}
			key := keyRe.Find(b[j:lineEnd])
			k := skipSpace(b, j+len(key), lineEnd)
			if len(key) > 0 && k < lineEnd && b[k] == '=' {
				v := skipSpace(b, k+1, lineEnd)
				a := Assignment{Key: string(key)}
				if v < len(b) && (b[v] == '"' || b[v] == '\'' || b[v] == '`') {
					q := b[v]
					if end := closing(b, v+1, q); end >= 0 {
						a.Quote, a.Start, a.End = q, v+1, end
						if nl := bytes.IndexByte(b[end:], '\n'); nl >= 0 {
							next = end + nl + 1
						} else {
							next = len(b)
						}
						out = append(out, a)
						i = next
						continue
					}
				}
				// unquoted: to the end of the line or a " #" comment
				end := lineEnd
				if end > v && b[end-1] == '\r' {
					end--
				}
				if c := bytes.Index(b[v:end], []byte(" #")); c >= 0 {
					end = v + c
				}
				for end > v && (b[end-1] == ' ' || b[end-1] == '\t') {
					end--
				}
				a.Start, a.End = v, end
				out = append(out, a)
			}
		}
		i = next
	}
	return out
}

func skipSpace(b []byte, i, end int) int {
	for i < end && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	return i
}

// closing finds the quote q closing a value that starts at i ('"' honours
// backslash escapes); -1 when there is none.
func closing(b []byte, i int, q byte) int {
	for ; i < len(b); i++ {
		if q == '"' && b[i] == '\\' {
			i++
			continue
		}
		if b[i] == q {
			return i
		}
	}
	return -1
}

// Looks-like-a-secret rules.
var (
	nameWords    = []string{"SECRET", "TOKEN", "PASSWORD", "PASSWD", "APIKEY", "API_KEY", "CREDENTIAL", "PRIVATE", "ACCESS_KEY"}
	nameSegments = map[string]bool{"KEY": true, "PASS": true, "PWD": true, "AUTH": true, "DSN": true, "SALT": true, "PAT": true}
	prefixes     = []string{"sk_live_", "sk_test_", "rk_live_", "rk_test_", "sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_",
		"glpat-", "xoxb-", "xoxp-", "xoxa-", "xapp-", "AKIA", "ASIA", "AIza", "ya29.", "hf_", "npm_", "pypi-", "SG.", "shpat_", "sq0atp-", "dop_v1_"}
	notSecret  = map[string]bool{"true": true, "false": true, "yes": true, "no": true, "on": true, "off": true, "null": true, "none": true, "nil": true}
	urlPassRe  = lazyre.New(`^[a-zA-Z][a-zA-Z0-9+.-]*://[^/@:\s]*:[^/@\s]+@`)
	jwtRe      = lazyre.New(`^eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.`)
	numberRe   = lazyre.New(`^[0-9]{1,6}$`)
	tokenishRe = lazyre.New(`^[A-Za-z0-9+/=_.\-]+$`)
)

// LooksSecret reports whether a value looks like a secret, by its key's name
// or by its own shape.
func LooksSecret(key, value string) bool {
	v := strings.TrimSpace(value)
	if v == "" || strings.HasPrefix(v, PlaceholderPrefix) || strings.HasPrefix(v, "$") || notSecret[strings.ToLower(v)] {
		return false
	}
	if byShape(v) {
		return true
	}
	if numberRe.MatchString(v) {
		return false
	}
	up := strings.ToUpper(key)
	for _, w := range nameWords {
		if strings.Contains(up, w) {
			return true
		}
	}
	for _, seg := range strings.FieldsFunc(up, func(r rune) bool { return r == '_' || r == '-' || r == '.' }) {
		if nameSegments[seg] {
			return true
		}
	}
	return false
}

func byShape(v string) bool {
	if strings.Contains(v, "-----BEGIN") && strings.Contains(v, "PRIVATE KEY") {
		return true
	}
	if urlPassRe.MatchString(v) || jwtRe.MatchString(v) {
		return true
	}
	if len(v) >= 16 {
		for _, p := range prefixes {
			if strings.HasPrefix(v, p) && tokenishRe.MatchString(v) {
				return true
			}
		}
	}
	if len(v) >= 24 && tokenishRe.MatchString(v) && !strings.Contains(v, "/") && entropy(v) >= 4.0 {
		hasDigit, hasLetter := false, false
		for _, r := range v {
			hasDigit = hasDigit || r >= '0' && r <= '9'
			hasLetter = hasLetter || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		}
		return hasDigit && hasLetter
	}
	return false
}

// entropy is the Shannon entropy of s in bits per character.
func entropy(s string) float64 {
	counts := map[rune]int{}
	n := 0
	for _, r := range s {
		counts[r]++
		n++
	}
	h := 0.0
	for _, c := range counts {
		p := float64(c) / float64(n)
		h -= p * math.Log2(p)
	}
	return h
}

// Entry is one masked value.
type Entry struct {
	File        string `json:"file"` // slash path inside the copy
	Key         string `json:"key"`
	Placeholder string `json:"placeholder"`
	Value       string `json:"value"` // the raw text as the file held it
}

// Vault is a task's masked values (its secrets.json).
type Vault struct {
	Entries []Entry `json:"entries"`
}

// VaultPath is secrets.json in a task directory.
func VaultPath(taskDir string) string { return filepath.Join(taskDir, "secrets.json") }

// LoadVault opens a task's sealed secrets.json; a missing one is empty.
func LoadVault(path string, s secrets.Sealer) (*Vault, error) {
	b, err := secrets.OpenFile(s, path)
	if errors.Is(err, os.ErrNotExist) {
		return &Vault{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("dotenv: %w", err)
	}
	var v Vault
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrVaultDamaged, err)
	}
	return &v, nil
}

// Save seals the vault into path.
func (v *Vault) Save(path string, s secrets.Sealer) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := secrets.SealFile(s, path, b); err != nil {
		return fmt.Errorf("dotenv: save %s: %w", path, err)
	}
	return nil
}

func (v *Vault) placeholderFor(file, key, value string) string {
	for _, e := range v.Entries {
		if e.File == file && e.Key == key && e.Value == value {
			return e.Placeholder
		}
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	clean := regexp.MustCompile(`[^A-Za-z0-9_]`).ReplaceAllString(key, "_")
	ph := PlaceholderPrefix + clean + "-" + hex.EncodeToString(b[:])
	v.Entries = append(v.Entries, Entry{File: file, Key: key, Placeholder: ph, Value: value})
	return ph
}

// MaskBytes masks the secret-looking values of one settings file (rel is its
// slash path in the copy) and returns the new content and the keys masked.
func (v *Vault) MaskBytes(rel string, b []byte) ([]byte, []string) {
	as := Parse(b)
	var out bytes.Buffer
	var keys []string
	last := 0
	for _, a := range as {
		raw := string(b[a.Start:a.End])
		if !LooksSecret(a.Key, raw) {
			continue
		}
		out.Write(b[last:a.Start])
		out.WriteString(v.placeholderFor(rel, a.Key, raw))
		last = a.End
		keys = append(keys, a.Key)
	}
	if len(keys) == 0 {
		return b, nil
	}
	out.Write(b[last:])
	return out.Bytes(), keys
}

// Unmask puts the real values back into a settings file's content (the
// agent's other edits stay); it returns the content and the keys restored. A
// file that is not a settings file is returned as it is.
func (v *Vault) Unmask(rel string, b []byte) ([]byte, []string) {
	if !IsDotenv(rel) || !bytes.Contains(b, []byte(PlaceholderPrefix)) {
		return b, nil
	}
	var keys []string
	for _, e := range v.Entries {
		if bytes.Contains(b, []byte(e.Placeholder)) {
			b = bytes.ReplaceAll(b, []byte(e.Placeholder), []byte(e.Value))
			keys = append(keys, e.Key)
		}
	}
	return b, keys
}

// skipDirs are not walked for settings files.
var skipDirs = map[string]bool{".git": true, "node_modules": true}

// Mask masks every settings file under dir in place (same mode, atomic) and
// returns the slash paths it changed, sorted. Symbolic links are not followed.
func (v *Vault) Mask(dir string) ([]string, error) {
	var changed []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir && skipDirs[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !IsDotenv(d.Name()) {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		nb, keys := v.MaskBytes(rel, b)
		if len(keys) == 0 {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if err := atomicfile.Write(p, nb, fi.Mode().Perm()); err != nil {
			return err
		}
		changed = append(changed, rel)
		return nil
	})
	if err != nil {
		return changed, fmt.Errorf("dotenv: mask %s: %w", dir, err)
	}
	sort.Strings(changed)
	return changed, nil
}

// NeedsMask reports whether a settings file holds a value Mask would
// replace: one that looks secret and is not a placeholder yet.
func NeedsMask(b []byte) bool {
	for _, a := range Parse(b) {
		if LooksSecret(a.Key, string(b[a.Start:a.End])) {
			return true
		}
	}
	return false
}

// HasPlaceholder reports whether b holds a placeholder (Unmask has work).
func HasPlaceholder(b []byte) bool { return bytes.Contains(b, []byte(PlaceholderPrefix)) }
