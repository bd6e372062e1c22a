package daemon

import (
	"errors"
	"io/fs"
	"regexp"
	"strings"
	"testing"

	"github.com/kulehq/kule/kernel"
)

func TestParseShortcuts(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in string
		ok bool
	}{
		"empty":             {`{}`, true},
		"rebinding":         {`{"task.commit":"Mod+Shift+Enter","palette.open":"Mod+P"}`, true},
		"unbinding":         {`{"task.new":""}`, true},
		"arrow with alt":    {`{"task.up":"Alt+ArrowUp"}`, true},
		"function key":      {`{"task.rename":"F2"}`, true},
		"one key twice":     {`{"task.commit":"Mod+K","palette.open":"Mod+K"}`, false},
		"unknown key name":  {`{"task.commit":"Mod+Banana"}`, false},
		"script in a key":   {`{"task.commit":"<script>"}`, false},
		"odd id":            {`{"Task Commit!":"Mod+K"}`, false},
		"not an object":     {`["Mod+K"]`, false},
		"not json":          {`{`, false},
		"the browser's key": {`{"task.commit":"Mod+W"}`, false},
		"a private window":  {`{"question.deny":"Mod+Shift+N"}`, false},
		"the Super key":     {`{"palette.open":"Meta+K"}`, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := ParseShortcuts([]byte(tc.in))
			if (err == nil) != tc.ok {
				t.Fatalf("ParseShortcuts(%s) = %v, want ok=%v", tc.in, err, tc.ok)
			}
			if err != nil && !errors.Is(err, errShortcuts) {
				t.Fatalf("error %v is not errShortcuts", err)
			}
		})
	}
}

// TestShortcutsRefuseReservedCombos: the daemon refuses a shortcuts.json
// binding a combo the browser keeps (Ctrl+W closes the tab), not only the
// page's editor; with the guard off the same file is kept and the command
// would have a key that never fires.
func TestShortcutsRefuseReservedCombos(t *testing.T) {
	d := startDaemon(t, Config{})
	body := `{"task.commit":"Mod+W"}`
	if code, out := call(t, d, "PUT", "/api/shortcuts", body); code != 400 || !strings.Contains(out, "closes the tab") {
		t.Fatalf("PUT of Mod+W: %d %s, want 400 saying why", code, out)
	}
	t.Run("without the guard", func(t *testing.T) {
		checkReserved = false
		defer func() { checkReserved = true }()
		if code, out := call(t, d, "PUT", "/api/shortcuts", body); code != 200 {
			t.Fatalf("with the guard off Mod+W should be kept (the attack works): %d %s", code, out)
		}
	})
}

func FuzzParseShortcuts(f *testing.F) {
	f.Add([]byte(`{"task.commit":"Mod+Shift+Enter"}`))
	f.Add([]byte(`{"a":"Alt+ArrowUp","b":""}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseShortcuts(b)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, k := range m {
			if k != "" && seen[k] {
				t.Fatalf("a key bound twice was accepted: %s", k)
			}
			seen[k] = true
		}
	})
}

// TestAppIsSelfContained checks the embedded app loads nothing from the
// network: no http(s) URL in a src/href/import/fetch, no inline script.
func TestAppIsSelfContained(t *testing.T) {
	t.Parallel()
	err := fs.WalkDir(webFS, "web", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := webFS.ReadFile(p)
		if err != nil {
			return err
		}
		s := string(b)
		for _, bad := range []string{`src="http`, `href="http`, `from 'http`, `from "http`, `fetch('http`, `url(http`, `@import`} {
			if strings.Contains(s, bad) {
				t.Errorf("%s reaches the network: %s", p, bad)
			}
		}
		if strings.HasSuffix(p, ".html") && strings.Contains(s, "<script>") {
			t.Errorf("%s has an inline script (the CSP forbids it)", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestGroupPolicyTemplateValidates: the Cedar text the app offers for a
// group's own policy is kept as it is (it parses and validates).
func TestGroupPolicyTemplateValidates(t *testing.T) {
	b, err := webFS.ReadFile("web/app.js")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)const ownTemplate = `(.*?)`;").FindSubmatch(b)
	if m == nil {
		t.Fatal("no ownTemplate in app.js")
	}
	if err := kernel.ValidatePolicy("the template", m[1]); err != nil {
		t.Fatalf("the app's group policy template: %v", err)
	}
}
