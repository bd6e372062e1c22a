package extensions

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"unicode/utf8"

	"github.com/kulehq/kule/kernel/internal/atomicfile"
	"github.com/kulehq/kule/sdk/extension"
)

// Settings an extension keeps: the person's values, in
// $KULE_HOME/extensions/<id>.settings.json, over the defaults of the
// manifest. Only the person changes them (the kernel's SetSettings, from
// the app's Settings → Extensions); the extension reads them
// (kule.settings.get). Each value is checked against the manifest's type
// for it, on the way in and again on the way out, so a value the manifest
// no longer declares, or of another type after an update, is not handed on.

// MaxSettingText is the longest string setting, in characters.
const MaxSettingText = 2000

func (s *Store) settingsPath(id string) string {
	return filepath.Join(Dir(s.home), id+".settings.json")
}

func (s *Store) savedSettings(id string) (map[string]any, error) {
	data, err := os.ReadFile(s.settingsPath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]any{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStore, err)
	}
	v := map[string]any{}
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("%w: %s: %v (remove it; the extension then reads its defaults)", ErrStore, s.settingsPath(id), err)
	}
	return v, nil
}

// checkSetting says whether v is a value of setting d's type.
func checkSetting(d extension.Setting, v any) error {
	ok := false
	switch d.Type {
	case "string":
		var str string
		str, ok = v.(string)
		if ok && (utf8.RuneCountInString(str) > MaxSettingText || !utf8.ValidString(str)) {
			return fmt.Errorf("setting %q: longer than %d characters", d.ID, MaxSettingText)
		}
	case "bool":
		_, ok = v.(bool)
	case "number":
		_, ok = v.(float64)
	}
	if !ok {
		return fmt.Errorf("setting %q is a %s; %v is not", d.ID, d.Type, v)
	}
	return nil
}

// settingsOf is what m's runtime reads: each declared setting's saved value
// when it is still of its declared type, else its default.
func (s *Store) settingsOf(m *extension.Manifest) (json.RawMessage, error) {
	saved, err := s.savedSettings(m.ID)
	if err != nil {
		return nil, err
	}
	v := map[string]any{}
	for _, d := range m.Settings {
		if sv, ok := saved[d.ID]; ok && checkSetting(d, sv) == nil {
			v[d.ID] = sv
		} else if d.Default != nil {
			v[d.ID] = d.Default
		}
	}
	return json.Marshal(v)
}

// Settings is the installed extension id's settings as its runtime reads
// them (JSON object, keys sorted).
func (s *Store) Settings(id string) (json.RawMessage, error) {
	pkg, err := s.read(id)
	if err != nil {
		return nil, err
	}
	return s.settingsOf(pkg.Manifest)
}

// SetSettings saves values for id's settings: each key must be a setting
// its manifest declares, each value of that setting's type (a JSON null
// puts the default back). Nothing is saved when one is refused.
func (s *Store) SetSettings(id string, values map[string]json.RawMessage) (json.RawMessage, error) {
	pkg, err := s.read(id)
	if err != nil {
		return nil, err
	}
	saved, err := s.savedSettings(id)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var d *extension.Setting
		for i := range pkg.Manifest.Settings {
			if pkg.Manifest.Settings[i].ID == k {
				d = &pkg.Manifest.Settings[i]
			}
		}
		if d == nil {
			return nil, fmt.Errorf("%w: %s has no setting %q", ErrDenied, id, k)
		}
		if string(values[k]) == "null" {
			delete(saved, k)
			continue
		}
		var v any
		if err := json.Unmarshal(values[k], &v); err != nil {
			return nil, fmt.Errorf("%w: %s: setting %q: not JSON", ErrDenied, id, k)
		}
		if err := checkSetting(*d, v); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrDenied, id, err)
		}
		saved[k] = v
	}
	data, _ := json.Marshal(saved)
	if err := os.MkdirAll(Dir(s.home), 0o700); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStore, err)
	}
	if err := atomicfile.Write(s.settingsPath(id), data, 0o600); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStore, err)
	}
	return s.settingsOf(pkg.Manifest)
}
