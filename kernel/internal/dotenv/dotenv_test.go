package dotenv

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kulehq/kule/kernel/internal/secrets"
)

func TestIsDotenv(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		".env": true, ".env.local": true, "prod.env": true, ".envrc": true, "sub/.env.production": true,
		".env.example": false, ".env.sample": false, ".env.template": false, "env": false, ".environment": false, "README.md": false, ".env.d": true,
	} {
		if got := IsDotenv(name); got != want {
			t.Errorf("IsDotenv(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestLooksSecret(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		key, value string
		want       bool
	}{
		"stripe by name":       {"STRIPE_KEY", "abc", true},
		"password":             {"DB_PASSWORD", "hunter2", true},
		"token lower":          {"github_token", "x1", true},
		"by prefix":            {"SOMETHING", "ghp_abcdefghijklmnop1234", true},
		"aws":                  {"X", "AKIAIOSFODNN7EXAMPLE", true},
		"url with password":    {"DATABASE_URL", "postgres://u:p4ss@db:5432/x", true},
		"url without password": {"DATABASE_URL", "postgres://db:5432/x", false},
		"high entropy":         {"X", "q8Zt3LmN0pR7vW2yB5cE9gH1jK4", true},
		"port":                 {"PORT", "8080", false},
		"ttl":                  {"TOKEN_TTL", "3600", false},
		"bool":                 {"AUTH_ENABLED", "true", false},
		"reference":            {"API_KEY", "${OTHER}", false},
		"placeholder":          {"API_KEY", "kule-secret-API_KEY-00", false},
		"plain word":           {"NODE_ENV", "production", false},
		"path":                 {"CACHE_DIR", "/var/cache/some/long/path/abcdef", false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := LooksSecret(tc.key, tc.value); got != tc.want {
				t.Fatalf("LooksSecret(%q, %q) = %v, want %v", tc.key, tc.value, got, tc.want)
			}
		})
	}
}

const sample = `# settings
export STRIPE_KEY=sk_live_abcdefghijklmnop1234
DB_PASSWORD="hun\"ter2"   # inline
NODE_ENV=production
PORT=8080
SSH_PRIVATE_KEY="-----BEGIN OPENSSH PRIVATE KEY-----
abc
-----END OPENSSH PRIVATE KEY-----"
SESSION_SECRET='s3cr3t-token-value'
EMPTY_TOKEN=
WIN_SECRET=crlf-value` + "\r\n"

func TestMaskUnmask(t *testing.T) {
	t.Parallel()
	v := &Vault{}
	masked, keys := v.MaskBytes(".env", []byte(sample))
	want := []string{"STRIPE_KEY", "DB_PASSWORD", "SSH_PRIVATE_KEY", "SESSION_SECRET", "WIN_SECRET"}
	if strings.Join(keys, ",") != strings.Join(want, ",") {
		t.Fatalf("masked %v, want %v", keys, want)
	}
	for _, s := range []string{"sk_live_abcdefghijklmnop1234", `hun\"ter2`, "BEGIN OPENSSH", "s3cr3t", "crlf-value"} {
		if bytes.Contains(masked, []byte(s)) {
			t.Errorf("masked file still holds %q:\n%s", s, masked)
		}
	}
	for _, s := range []string{"NODE_ENV=production", "PORT=8080", "# inline", "export STRIPE_KEY=kule-secret-STRIPE_KEY-", "\r\n"} {
		if !bytes.Contains(masked, []byte(s)) {
			t.Errorf("masked file lost %q:\n%s", s, masked)
		}
	}
	// Masking again gives the same bytes (stable placeholders).
	again, _ := v.MaskBytes(".env", []byte(sample))
	if !bytes.Equal(again, masked) {
		t.Errorf("masking twice differs")
	}
	// The agent edits the masked file: adds a line, changes one, moves another.
	edited := strings.Replace(string(masked), "NODE_ENV=production", "NODE_ENV=development\nNEW_FLAG=1", 1)
	back, restored := v.Unmask(".env", []byte(edited))
	if len(restored) != 5 {
		t.Errorf("restored %v", restored)
	}
	wantBack := strings.Replace(sample, "NODE_ENV=production", "NODE_ENV=development\nNEW_FLAG=1", 1)
	if string(back) != wantBack {
		t.Errorf("unmasked:\n%s\nwant:\n%s", back, wantBack)
	}
	// Not a settings file: placeholders stay.
	if out, _ := v.Unmask("notes.txt", masked); !bytes.Equal(out, masked) {
		t.Errorf("a non-settings file was unmasked")
	}
}

func TestMaskDirAndVault(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	sealer, err := secrets.OpenSealer(home, true)
	if err != nil {
		t.Fatal(err)
	}
	copyDir, baseDir := t.TempDir(), t.TempDir()
	files := map[string]string{
		".env":                  "API_KEY=abc123\n",
		"app/.env.local":        "TOKEN=tok\n",
		"deploy/prod.env":       "X=sk_live_abcdefghijklmnop1234\n",
		".envrc":                "export GITHUB_TOKEN=ghp_abcdefghijklmnop1234\n",
		".env.example":          "API_KEY=your-key-here\n",
		"node_modules/pkg/.env": "API_KEY=fixture\n",
		"README.md":             "API_KEY=abc123\n",
	}
	for _, d := range []string{copyDir, baseDir} {
		for p, c := range files {
			os.MkdirAll(filepath.Join(d, filepath.Dir(p)), 0o755)
			os.WriteFile(filepath.Join(d, p), []byte(c), 0o640)
		}
	}
	v := &Vault{}
	changed, err := v.Mask(copyDir)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(changed, ","); got != ".env,.envrc,app/.env.local,deploy/prod.env" {
		t.Fatalf("changed %s", got)
	}
	if _, err := v.Mask(baseDir); err != nil {
		t.Fatal(err)
	}
	for p := range files {
		a, _ := os.ReadFile(filepath.Join(copyDir, p))
		b, _ := os.ReadFile(filepath.Join(baseDir, p))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between copy and base after masking both", p)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(copyDir, ".env.example")); string(b) != files[".env.example"] {
		t.Errorf(".env.example was masked")
	}
	if fi, _ := os.Stat(filepath.Join(copyDir, ".env")); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode changed to %v", fi.Mode().Perm())
	}
	vp := filepath.Join(home, "secrets.json")
	if err := v.Save(vp, sealer); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(vp)
	if bytes.Contains(raw, []byte("abc123")) {
		t.Errorf("secrets.json holds a value in the clear")
	}
	v2, err := LoadVault(vp, sealer)
	if err != nil {
		t.Fatal(err)
	}
	masked, _ := os.ReadFile(filepath.Join(copyDir, ".env"))
	if back, _ := v2.Unmask(".env", masked); string(back) != files[".env"] {
		t.Errorf("unmask after reload: %q", back)
	}
}

// FuzzMask: masking never panics, and unmasking gives back the file byte for
// byte; a masked value is gone from its place.
func FuzzMask(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte("A_TOKEN=\"unterminated\nB=2\n"))
	f.Add([]byte("export\tKEY = 'x y' # c\n\n#KEY=no\nK=`tick`\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, a := range Parse(b) {
			if a.Start < 0 || a.End > len(b) || a.Start > a.End {
				t.Fatalf("span %d:%d out of %d", a.Start, a.End, len(b))
			}
		}
		if bytes.Contains(b, []byte(PlaceholderPrefix)) {
			return
		}
		v := &Vault{}
		masked, keys := v.MaskBytes(".env", b)
		back, _ := v.Unmask(".env", masked)
		if !bytes.Equal(back, b) {
			t.Fatalf("round trip changed the file:\n%q\n%q", b, back)
		}
		// NeedsMask says whether masking has work, and masking is done
		// in one pass: a masked file needs nothing more (the kernel masks
		// before every command and must reach a fixed point).
		if NeedsMask(b) != (len(keys) > 0) {
			t.Fatalf("NeedsMask = %v, but masking changed %v", NeedsMask(b), keys)
		}
		if NeedsMask(masked) {
			t.Fatalf("a masked file still needs masking:\n%q", masked)
		}
	})
}
