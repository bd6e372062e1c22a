package daemon

import (
	"strings"
	"testing"
)

func TestParseThemes(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		in   string
		ok   bool
		want string // part of the error
	}{
		"empty object":    {`{}`, true, ""},
		"named theme":     {`{"theme":"nord","motion":"off"}`, true, ""},
		"own theme":       {`{"theme":"own-dusk","own":[{"id":"own-dusk","name":"Dusk","base":"dark","colours":{"bg":"#101820","text":"#f0f0f0"}}]}`, true, ""},
		"unknown theme":   {`{"theme":"neon"}`, false, "neither"},
		"bad motion":      {`{"motion":"sometimes"}`, false, "motion"},
		"unknown part":    {`{"own":[{"id":"own-a","name":"A","base":"light","colours":{"background-image":"#000000"}}]}`, false, "not a part"},
		"css in a colour": {`{"own":[{"id":"own-a","name":"A","base":"light","colours":{"bg":"red;background:url(x)"}}]}`, false, "not a colour"},
		"short colour":    {`{"own":[{"id":"own-a","name":"A","base":"light","colours":{"bg":"#fff"}}]}`, false, "not a colour"},
		"system base":     {`{"own":[{"id":"own-a","name":"A","base":"system","colours":{}}]}`, false, "based on"},
		"bad id":          {`{"own":[{"id":"Dusk","name":"A","base":"light","colours":{}}]}`, false, "id"},
		"twice":           {`{"own":[{"id":"own-a","name":"A","base":"light","colours":{}},{"id":"own-a","name":"B","base":"dark","colours":{}}]}`, false, "twice"},
		"unknown field":   {`{"theme":"light","script":"x"}`, false, "unknown field"},
		"two values":      {`{} {}`, false, "more than one"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseThemes([]byte(c.in))
			if (err == nil) != c.ok || (err != nil && !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("ParseThemes(%s) = %v; want ok=%v (%q)", c.in, err, c.ok, c.want)
			}
		})
	}
}

// FuzzParseThemes: whatever the file holds, what is accepted names known themes and parts and
// holds only #rrggbb colours (nothing that could carry CSS of its own into the page).
func FuzzParseThemes(f *testing.F) {
	f.Add([]byte(`{"theme":"nord","motion":"off"}`))
	f.Add([]byte(`{"theme":"own-dusk","own":[{"id":"own-dusk","name":"Dusk","base":"dark","colours":{"bg":"#101820"}}]}`))
	f.Add([]byte(`{"own":[{"id":"own-a","name":"A","base":"light","colours":{"bg":"red;x"}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseThemes(b)
		if err != nil {
			return
		}
		for _, o := range s.Own {
			for part, c := range o.Colours {
				if !colourRe().MatchString(c) || strings.ContainsAny(part, ";:{}()") {
					t.Fatalf("accepted %s=%q", part, c)
				}
			}
		}
	})
}
