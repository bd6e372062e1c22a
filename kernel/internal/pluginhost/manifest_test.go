package pluginhost

import (
	"errors"
	"strings"
	"testing"
)

const goodManifest = `name = "ini"
kind = "differ"
version = "0.1.0"
executable = "kule-differ-ini"
sha256 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
permissions = []

[differ]
patterns = ["*.ini", "conf/*.cfg"]
`

func TestParseManifest(t *testing.T) {
	sha := `sha256 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"` + "\n"
	tests := map[string]struct {
		src  string
		want string // "" for success, else a part of the error
	}{
		"good":                 {src: goodManifest},
		"executable defaults":  {src: "name = \"x\"\nkind = \"differ\"\nversion = \"1.2.3\"\n" + sha + "[differ]\npatterns = [\"*.x\"]\n"},
		"transport network":    {src: "name = \"slack\"\nkind = \"transport\"\nversion = \"1.0.0\"\n" + sha + "permissions = [\"network:slack.com:443\"]\n"},
		"unknown key":          {src: goodManifest + "run_as_root = true\n", want: "unknown keys differ.run_as_root"},
		"bad name":             {src: strings.Replace(goodManifest, `"ini"`, `"../ini"`, 1), want: "name"},
		"bad kind":             {src: strings.Replace(goodManifest, `"differ"`, `"kernel"`, 1), want: "kind"},
		"bad version":          {src: strings.Replace(goodManifest, `"0.1.0"`, `"latest"`, 1), want: "version"},
		"short sha":            {src: strings.Replace(goodManifest, "0123456789abcdef\"", "\"", 1), want: "sha256"},
		"upper-case sha":       {src: strings.Replace(goodManifest, "abcdef\"", "ABCDEF\"", 1), want: "sha256"},
		"executable with path": {src: strings.Replace(goodManifest, `"kule-differ-ini"`, `"../../bin/sh"`, 1), want: "executable"},
		"executable manifest":  {src: strings.Replace(goodManifest, `"kule-differ-ini"`, `"plugin.toml"`, 1), want: "executable"},
		"differ asks network":  {src: strings.Replace(goodManifest, "permissions = []", `permissions = ["network:example.com"]`, 1), want: "cannot ask for it"},
		"no patterns":          {src: strings.Replace(goodManifest, `patterns = ["*.ini", "conf/*.cfg"]`, "", 1), want: "patterns"},
		"bad pattern":          {src: strings.Replace(goodManifest, `"*.ini"`, `"[*.ini"`, 1), want: "pattern"},
		"not toml":             {src: "name = ", want: "plugin manifest"},
		"too large":            {src: goodManifest + "# " + strings.Repeat("x", maxManifest), want: "larger"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m, err := ParseManifest([]byte(tc.src))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("ParseManifest = %v", err)
				}
				if m.Executable == "" {
					t.Errorf("no executable name")
				}
				return
			}
			if !errors.Is(err, ErrManifest) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseManifest = %v, want ErrManifest mentioning %q", err, tc.want)
			}
		})
	}
}

func TestMatches(t *testing.T) {
	m, err := ParseManifest([]byte(goodManifest))
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{"a.ini": true, "deep/dir/a.ini": true, "conf/x.cfg": true, "other/x.cfg": false, "a.go": false} {
		if got := m.Matches(path); got != want {
			t.Errorf("Matches(%q) = %v, want %v", path, got, want)
		}
	}
}

// FuzzParseManifest: no panic, and whatever parses keeps every rule.
func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(goodManifest))
	f.Add([]byte("name = \"x\"\nkind = \"transport\"\nversion = \"1.0.0\"\nsha256 = \"" + strings.Repeat("a", 64) + "\"\npermissions = [\"network:a.b\"]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest(data)
		if err != nil {
			return
		}
		if !nameRe.MatchString(m.Name) || !sha256Re.MatchString(m.SHA256) || strings.ContainsAny(m.Executable, "/\x00") || m.Executable == ".." {
			t.Fatalf("accepted a manifest that breaks a rule: %+v", m)
		}
		if m.Kind == "differ" && len(m.Permissions) > 0 {
			t.Fatalf("accepted a differ with permissions: %+v", m)
		}
	})
}
