package extensions

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

// TestSettingsTypedByTheManifest: only declared settings of the declared
// type are saved; a saved value the manifest no longer types so (after an
// update) is not handed on, the default is; removing the extension forgets
// its settings.
func TestSettingsTypedByTheManifest(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	s := New(home)
	m := func(typ, def string) string {
		return `{"id":"me.s","name":"S","version":"1.0.0","permissions":["settings"],"settings":[{"id":"word","title":"Word","type":"` + typ + `","default":` + def + `},{"id":"on","title":"On","type":"bool","default":false}]}`
	}
	if _, err := s.Install(pack(t, map[string]string{"extension.json": m("string", `"TODO"`), "main.js": "1"})); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []map[string]json.RawMessage{{"word": json.RawMessage(`3`)}, {"on": json.RawMessage(`"yes"`)}, {"other": json.RawMessage(`"x"`)}, {"word": json.RawMessage(`"ok"`), "on": json.RawMessage(`1`)}} {
		if _, err := s.SetSettings("me.s", bad); !errors.Is(err, ErrDenied) {
			t.Fatalf("%v: %v; want refused", bad, err)
		}
	}
	if v, _ := s.Settings("me.s"); string(v) != `{"on":false,"word":"TODO"}` {
		t.Fatalf("after refusals: %s", v)
	}
	v, err := s.SetSettings("me.s", map[string]json.RawMessage{"word": json.RawMessage(`"FIXME"`), "on": json.RawMessage(`true`)})
	if err != nil || string(v) != `{"on":true,"word":"FIXME"}` {
		t.Fatalf("saved: %s %v", v, err)
	}
	if v, _ := s.SetSettings("me.s", map[string]json.RawMessage{"on": json.RawMessage(`null`)}); string(v) != `{"on":false,"word":"FIXME"}` {
		t.Fatalf("null puts the default back: %s", v)
	}
	// A new version types word as a number: the saved string is not handed on.
	if _, err := s.Install(pack(t, map[string]string{"extension.json": m("number", `1`), "main.js": "1"})); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Settings("me.s"); string(v) != `{"on":false,"word":1}` {
		t.Fatalf("after the update: %s", v)
	}
	if err := s.Remove("me.s"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.settingsPath("me.s")); !os.IsNotExist(err) {
		t.Fatalf("settings kept after remove: %v", err)
	}
}

// FuzzSetSettings: whatever values are sent, either nothing is saved or
// what the runtime then reads holds each declared setting at its declared
// type, and nothing undeclared.
func FuzzSetSettings(f *testing.F) {
	f.Add(`{"word":"x","on":true,"n":1.5}`)
	f.Add(`{"word":3}`)
	f.Add(`{"on":null,"other":"y"}`)
	f.Add(`{"word":"` + strings.Repeat("é", MaxSettingText+1) + `"}`)
	f.Fuzz(func(t *testing.T, body string) {
		var values map[string]json.RawMessage
		if json.Unmarshal([]byte(body), &values) != nil {
			return
		}
		home := t.TempDir()
		s := New(home)
		m := `{"id":"me.s","name":"S","version":"1.0.0","permissions":["settings"],"settings":[` +
			`{"id":"word","title":"W","type":"string","default":"d"},{"id":"on","title":"O","type":"bool","default":false},{"id":"n","title":"N","type":"number","default":0}]}`
		if _, err := s.Install(pack(t, map[string]string{"extension.json": m, "main.js": "1"})); err != nil {
			t.Fatal(err)
		}
		_, err := s.SetSettings("me.s", values)
		got, rerr := s.Settings("me.s")
		if rerr != nil {
			t.Fatalf("settings unreadable after %s: %v (set: %v)", body, rerr, err)
		}
		var v map[string]any
		if err := json.Unmarshal(got, &v); err != nil {
			t.Fatal(err)
		}
		if len(v) != 3 {
			t.Fatalf("%s → %s", body, got)
		}
		if _, ok := v["word"].(string); !ok {
			t.Fatalf("word: %s", got)
		}
		if _, ok := v["on"].(bool); !ok {
			t.Fatalf("on: %s", got)
		}
		if _, ok := v["n"].(float64); !ok {
			t.Fatalf("n: %s", got)
		}
		if err != nil && string(got) != `{"n":0,"on":false,"word":"d"}` {
			t.Fatalf("refused (%v) yet saved: %s", err, got)
		}
	})
}
