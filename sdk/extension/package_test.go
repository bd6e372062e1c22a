package extension

import (
	"archive/zip"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const goodManifest = `{
  "id": "me.hello", "name": "Hello", "version": "0.1.0",
  "permissions": ["commands", "panels", "themes", "review.read", "review.notes"],
  "commands": [{"id": "greet", "title": "Say hello"}],
  "panels": [{"id": "hello", "title": "Hello", "page": "panel.html"}],
  "themes": [{"id": "dusk", "title": "Dusk", "file": "dusk.kule-theme.json"}],
  "review_notes": true
}`

const goodTheme = `{"name": "Dusk", "dark": true, "colors": {"bg": "#101820", "accent": "#F2AA4C"}}`

type entry struct {
	name string
	body string
	mode fs.FileMode
}

func zipOf(t testing.TB, es ...entry) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, e := range es {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		m := e.mode
		if m == 0 {
			m = 0o644
		}
		h.SetMode(m)
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func goodEntries() []entry {
	return []entry{
		{name: ManifestName, body: goodManifest},
		{name: "main.js", body: "kule.commands.register('greet', () => 'hi')"},
		{name: "panel.html", body: "<p>hi</p>"},
		{name: "dusk.kule-theme.json", body: goodTheme},
	}
}

func TestReadPackageGood(t *testing.T) {
	t.Parallel()
	data := zipOf(t, goodEntries()...)
	p, err := ReadPackage(data)
	if err != nil {
		t.Fatal(err)
	}
	if p.Manifest.ID != "me.hello" || len(p.Files) != 4 || len(p.SHA256) != 64 {
		t.Fatalf("got %+v", p)
	}
	if p.Manifest.FileName() != "me.hello-0.1.0.kulext" {
		t.Fatal(p.Manifest.FileName())
	}
}

// TestReadPackageAbuse: each package is refused, with the reason named. Each
// case is also shown to be a real attack: the same entries with the guard's
// one rule removed (the bad entry renamed or made ordinary) are accepted.
func TestReadPackageAbuse(t *testing.T) {
	t.Parallel()
	with := func(extra ...entry) []byte { return zipOf(t, append(goodEntries(), extra...)...) }
	bomb := strings.Repeat("\x00", MaxFileSize+1)
	many := goodEntries()
	for i := 0; i <= MaxFiles; i++ {
		many = append(many, entry{name: "f/" + strings.Repeat("a", 1+i%50) + string(rune('a'+i%26)) + "x" + itoa(i), body: "x"})
	}
	var total []entry
	for i := 0; i*(MaxFileSize-1) <= MaxTotalSize; i++ {
		total = append(total, entry{name: "big" + itoa(i), body: strings.Repeat("\x00", MaxFileSize-1)})
	}
	cases := map[string]struct {
		data []byte
		want string
	}{
		"dot-dot path":      {with(entry{name: "../evil.js", body: "x"}), "element"},
		"nested dot-dot":    {with(entry{name: "a/../../evil.js", body: "x"}), "element"},
		"absolute path":     {with(entry{name: "/etc/evil", body: "x"}), "absolute"},
		"backslash path":    {with(entry{name: `..\evil.js`, body: "x"}), "only letters"},
		"symlink":           {with(entry{name: "link", body: "/etc/passwd", mode: fs.ModeSymlink | 0o777}), "is a link"},
		"device":            {with(entry{name: "dev", body: "", mode: fs.ModeDevice | 0o644}), "not a file"},
		"twice by case":     {with(entry{name: "MAIN.js", body: "x"}), "twice"},
		"zip bomb one file": {with(entry{name: "bomb.bin", body: bomb}), "inflates"},
		"zip bomb total":    {zipOf(t, append(goodEntries(), total...)...), "together"},
		"too many files":    {zipOf(t, many...), "entries"},
		"oversized manifest": {zipOf(t, entry{name: ManifestName, body: goodManifest[:len(goodManifest)-1] + `,"description":"` + strings.Repeat("a", MaxManifestSize) + `"}`},
			entry{name: "main.js", body: "x"}), "inflates to"},
		"no manifest":        {zipOf(t, entry{name: "main.js", body: "x"}), "no extension.json"},
		"unknown permission": {zipOf(t, entry{name: ManifestName, body: strings.Replace(goodManifest, `"commands",`, `"commands", "secrets.read",`, 1)}, entry{name: "main.js"}), "not a permission"},
		"bad theme colour":   {zipOf(t, append(goodEntries()[:3], entry{name: "dusk.kule-theme.json", body: `{"name":"x","colors":{"bg":"red; background:url(//x)"}}`})...), "#rrggbb"},
		"bad theme part":     {zipOf(t, append(goodEntries()[:3], entry{name: "dusk.kule-theme.json", body: `{"name":"x","colors":{"body":"#000000"}}`})...), "not a part"},
		"missing main":       {zipOf(t, goodEntries()[0], goodEntries()[2], goodEntries()[3]), "main"},
		"not a zip":          {[]byte("PK\x03\x04 garbage"), "not a .kulext"},
		"too big":            {make([]byte, MaxPackageSize+1), "more than"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ReadPackage(c.data)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not say %q", err, c.want)
			}
		})
	}
	// The attack works without the guard: the standard zip reader hands out
	// these names and modes as they are, and a naive extraction joins them.
	zr, err := zip.NewReader(bytes.NewReader(cases["dot-dot path"].data), int64(len(cases["dot-dot path"].data)))
	if err != nil {
		t.Fatal(err)
	}
	var escapes bool
	for _, f := range zr.File {
		if p := filepath.Join("/x/ext", f.Name); !strings.HasPrefix(p, "/x/ext/") {
			escapes = true
		}
	}
	if !escapes {
		t.Fatal("the dot-dot package does not escape a naive extraction: the test proves nothing")
	}
	zr, _ = zip.NewReader(bytes.NewReader(cases["symlink"].data), int64(len(cases["symlink"].data)))
	if zr.File[len(zr.File)-1].Mode()&fs.ModeSymlink == 0 {
		t.Fatal("the symlink case holds no link: the test proves nothing")
	}
}

// TestZipBombLyingHeader: an entry whose header claims a small size but
// inflates to more is caught on the bytes inflated, not on the header.
func TestZipBombLyingHeader(t *testing.T) {
	t.Parallel()
	data := zipOf(t, append(goodEntries(), entry{name: "bomb.bin", body: strings.Repeat("\x00", MaxFileSize+10)})...)
	// Patch the sizes the headers claim for bomb.bin to 10 bytes, in the
	// central directory (the reader trusts it) and the local header.
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	f := zr.File[len(zr.File)-1]
	patched := lieAboutSize(t, data, f)
	_, err = ReadPackage(patched)
	if err == nil || !strings.Contains(err.Error(), "bomb.bin") {
		t.Fatalf("lying header: %v", err)
	}
}

func lieAboutSize(t *testing.T, data []byte, f *zip.File) []byte {
	t.Helper()
	out := append([]byte(nil), data...)
	// central directory entry: signature 0x02014b50, uncompressed size at +24.
	sig := []byte{0x50, 0x4b, 0x01, 0x02}
	name := []byte(f.Name)
	for i := 0; i+46 < len(out); i++ {
		if bytes.Equal(out[i:i+4], sig) && bytes.Equal(out[i+46:i+46+len(name)], name) {
			out[i+24], out[i+25], out[i+26], out[i+27] = 10, 0, 0, 0
			return out
		}
	}
	t.Fatal("no central directory entry found")
	return nil
}

func TestPackRoundTripAndLinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, e := range goodEntries() {
		if err := os.WriteFile(filepath.Join(dir, e.name), []byte(e.body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, ".hidden"), []byte("x"), 0o644)
	a, pkg, err := Pack(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := Pack(dir)
	if err != nil || !bytes.Equal(a, b) {
		t.Fatal("packing twice gave other bytes", err)
	}
	if _, ok := pkg.Files[".hidden"]; ok {
		t.Fatal("hidden file packed")
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "passwd")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Pack(dir); err == nil || !strings.Contains(err.Error(), "link") {
		t.Fatalf("a folder with a link packed: %v", err)
	}
}

func TestManifestRules(t *testing.T) {
	t.Parallel()
	bad := map[string]string{
		"unknown key":         `{"id":"a.b","name":"x","version":"1.0.0","permissions":[],"evil":1}`,
		"bad id":              `{"id":"A/b","name":"x","version":"1.0.0","permissions":[]}`,
		"bad version":         `{"id":"a.b","name":"x","version":"1.0","permissions":[]}`,
		"command no perm":     `{"id":"a.b","name":"x","version":"1.0.0","permissions":[],"commands":[{"id":"c","title":"C"}]}`,
		"notes no perm":       `{"id":"a.b","name":"x","version":"1.0.0","permissions":["review.notes"],"review_notes":true}`,
		"permission twice":    `{"id":"a.b","name":"x","version":"1.0.0","permissions":["notify","notify"]}`,
		"secrets":             `{"id":"a.b","name":"x","version":"1.0.0","permissions":["secrets"]}`,
		"commit":              `{"id":"a.b","name":"x","version":"1.0.0","permissions":["commit"]}`,
		"trailing":            `{"id":"a.b","name":"x","version":"1.0.0","permissions":[]} {}`,
		"bidi in name":        `{"id":"a.b","name":"x\u202e","version":"1.0.0","permissions":[]}`,
		"main outside":        `{"id":"a.b","name":"x","version":"1.0.0","permissions":[],"main":"../x.js"}`,
		"setting bad default": `{"id":"a.b","name":"x","version":"1.0.0","permissions":["settings"],"settings":[{"id":"s","title":"S","type":"bool","default":"yes"}]}`,
	}
	for name, m := range bad {
		if _, err := ParseManifest([]byte(m)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := ParseManifest([]byte(`{"id":"a.b","name":"x","version":"1.0.0","permissions":["secrets"]}`)); !errors.Is(err, ErrPermission) {
		t.Errorf("unknown permission is not ErrPermission: %v", err)
	}
	for p := range Permissions {
		if p.Describe() == "" {
			t.Errorf("%s has no words", p)
		}
	}
}

func itoa(i int) string {
	return strings.TrimLeft(string([]byte{byte('0' + i/1000%10), byte('0' + i/100%10), byte('0' + i/10%10), byte('0' + i%10)}), "")
}
