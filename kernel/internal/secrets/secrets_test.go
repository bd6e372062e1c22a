package secrets

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func keyFileStore(t *testing.T) (*Store, string) {
	t.Helper()
	home := t.TempDir()
	s, err := OpenSealer(home, true)
	if err != nil {
		t.Fatal(err)
	}
	st, err := OpenWith(home, s)
	if err != nil {
		t.Fatal(err)
	}
	return st, home
}

func TestKeyFileStore(t *testing.T) {
	t.Parallel()
	st, home := keyFileStore(t)
	const value = "sk_live_TOPSECRET_123456"
	if _, err := st.Add("STRIPE_KEY", value, []string{"API.stripe.com.", "api.stripe.com"}); err != nil {
		t.Fatal(err)
	}
	got, err := st.Get("STRIPE_KEY")
	if err != nil {
		t.Fatal(err)
	}
	if got.Value != value || len(got.Hosts) != 1 || got.Hosts[0] != "api.stripe.com" {
		t.Fatalf("got %+v", got)
	}
	fi, err := os.Stat(KeyFilePath(home))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi.Mode(), err)
	}
	// The value is nowhere on disk in the clear.
	filepath.Walk(home, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			b, _ := os.ReadFile(p)
			if bytes.Contains(b, []byte(value)) {
				t.Errorf("%s holds the value in the clear", p)
			}
		}
		return nil
	})
	list, _ := st.List()
	if len(list) != 1 || list[0].Value != "" {
		t.Fatalf("list: %+v", list)
	}
	replaced, err := st.Add("STRIPE_KEY", "new", []string{"api.stripe.com"})
	if err != nil || !replaced {
		t.Fatalf("replace: %v %v", replaced, err)
	}
	// A new store on the same home reads it back (the sealing is remembered).
	s2, err := OpenSealer(home, false)
	if err != nil || s2.Kind() != KeyFile {
		t.Fatalf("reopen: %v %v", s2, err)
	}
	st2, _ := OpenWith(home, s2)
	if g, err := st2.Get("STRIPE_KEY"); err != nil || g.Value != "new" {
		t.Fatalf("reopen get: %+v %v", g, err)
	}
	if err := st.Remove("STRIPE_KEY"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get("STRIPE_KEY"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after remove: %v", err)
	}
	if err := st.Remove("STRIPE_KEY"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second remove: %v", err)
	}
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	st, _ := keyFileStore(t)
	tests := map[string]struct {
		name, value string
		hosts       []string
		want        error
	}{
		"bad name":       {"A-B", "v", []string{"h.example"}, ErrBadName},
		"path name":      {"../x", "v", []string{"h.example"}, ErrBadName},
		"no host":        {"A", "v", nil, ErrNoHost},
		"url host":       {"A", "v", []string{"https://h.example"}, ErrBadHost},
		"bad port":       {"A", "v", []string{"h.example:99999"}, ErrBadHost},
		"remote ip port": {"A", "v", []string{"10.0.0.5:8000"}, ErrAddressHost},
		"ip host":        {"A", "v", []string{"127.0.0.1"}, ErrAddressHost},
		"ipv6 host":      {"A", "v", []string{"::1"}, ErrAddressHost},
		"wildcard host":  {"A", "v", []string{"*.example"}, ErrBadHost},
		"empty value":    {"A", "", []string{"h.example"}, ErrEmptyValue},
		"line break":     {"A", "v\r\nX-Evil: 1", []string{"h.example"}, ErrBadValue},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := st.Add(tc.name, tc.value, tc.hosts); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

// TestTamper: a changed sealed file, or one moved to another name, does not open.
func TestTamper(t *testing.T) {
	t.Parallel()
	st, home := keyFileStore(t)
	st.Add("A", "value-a", []string{"a.example"})
	st.Add("B", "value-b", []string{"b.example"})
	dir := filepath.Join(home, "secrets")
	b, _ := os.ReadFile(filepath.Join(dir, "A.sealed"))
	os.WriteFile(filepath.Join(dir, "B.sealed"), b, 0o600) // A's box under B's name
	if _, err := st.Get("B"); !errors.Is(err, ErrDamaged) {
		t.Fatalf("moved box: %v", err)
	}
	flipped := bytes.Replace(b, []byte(`"sealed":"`), []byte(`"sealed":"AAAA`), 1)
	os.WriteFile(filepath.Join(dir, "A.sealed"), flipped, 0o600)
	if _, err := st.Get("A"); !errors.Is(err, ErrDamaged) {
		t.Fatalf("changed box: %v", err)
	}
}

func TestKeyFileReadableByOthers(t *testing.T) {
	t.Parallel()
	_, home := keyFileStore(t)
	os.Chmod(KeyFilePath(home), 0o644)
	if _, err := OpenSealer(home, true); !errors.Is(err, ErrKeyFileMode) {
		t.Fatalf("got %v, want ErrKeyFileMode", err)
	}
}

func TestSealFile(t *testing.T) {
	t.Parallel()
	st, home := keyFileStore(t)
	p := filepath.Join(home, "secrets.json")
	if err := SealFile(st.Sealer(), p, []byte(`{"x":1}`)); err != nil {
		t.Fatal(err)
	}
	got, err := OpenFile(st.Sealer(), p)
	if err != nil || string(got) != `{"x":1}` {
		t.Fatalf("%s %v", got, err)
	}
	if _, err := OpenFile(st.Sealer(), filepath.Join(home, "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
}

// TestSecretService runs against a real gnome-keyring on a private session
// bus (dbus-run-session), unlocked with a throw-away password.
func TestSecretService(t *testing.T) {
	if os.Getenv("KULE_SS_CHILD") == "1" {
		secretServiceChild(t)
		return
	}
	for _, tool := range []string{"dbus-run-session", "gnome-keyring-daemon"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is needed on CI (apt-get install dbus-daemon gnome-keyring)", tool)
			}
			t.Skipf("%s is not installed", tool)
		}
	}
	home := t.TempDir()
	script := `echo -n kule-test | gnome-keyring-daemon --unlock --components=secrets >/dev/null 2>&1 || exit 3; exec "$0" -test.run '^TestSecretService$' -test.v`
	cmd := exec.Command("dbus-run-session", "--", "sh", "-c", script, os.Args[0])
	cmd.Env = append(os.Environ(), "KULE_SS_CHILD=1", "KULE_SS_HOME="+home, "HOME="+home, "XDG_DATA_HOME="+filepath.Join(home, "data"), "XDG_RUNTIME_DIR="+filepath.Join(home, "run"))
	os.MkdirAll(filepath.Join(home, "run"), 0o700)
	// The bus and the keyring it starts inherit the output pipe and may
	// outlive the session for a while: their own process group, ended
	// after the run, and a bound on how long Wait waits for the pipe.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if errors.Is(err, exec.ErrWaitDelay) {
		err = nil // the run ended; a daemon it started held the pipe
	}
	if err != nil || !strings.Contains(string(out), "secret-service-ok") {
		t.Fatalf("secret service child: %v\n%s", err, out)
	}
	// The key never went to a key file.
	if _, err := os.Stat(KeyFilePath(home)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a key file was made although the Secret Service answered")
	}
	// Without the bus, the store refuses instead of falling back.
	cmd = exec.Command(os.Args[0], "-test.run", "^TestSecretService$")
	cmd.Env = append(os.Environ(), "KULE_SS_CHILD=1", "KULE_SS_HOME="+home, "KULE_SS_EXPECT=unavailable", "DBUS_SESSION_BUS_ADDRESS=")
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "unavailable-ok") {
		t.Fatalf("without the bus: %v\n%s", err, out)
	}
}

func secretServiceChild(t *testing.T) {
	home := os.Getenv("KULE_SS_HOME")
	if os.Getenv("KULE_SS_EXPECT") == "unavailable" {
		_, err := Open(home)
		if !errors.Is(err, ErrKeyUnavailable) {
			t.Fatalf("got %v, want ErrKeyUnavailable", err)
		}
		os.Stdout.WriteString("unavailable-ok\n")
		return
	}
	st, err := Open(home)
	if err != nil {
		t.Fatal(err)
	}
	if st.Sealer().Kind() != SecretService {
		t.Fatalf("sealing %s, want the Secret Service", st.Sealer().Kind())
	}
	if _, err := st.Add("K", "value", []string{"h.example"}); err != nil {
		t.Fatal(err)
	}
	st2, err := Open(home) // a second process-like open finds the same key
	if err != nil {
		t.Fatal(err)
	}
	if s, err := st2.Get("K"); err != nil || s.Value != "value" {
		t.Fatalf("%+v %v", s, err)
	}
	os.Stdout.WriteString("secret-service-ok\n")
}

// An endpoint on this machine, or a name with its port, is a host a
// secret can be kept for: the proxy puts the key in there.
func TestEndpointHosts(t *testing.T) {
	for in, want := range map[string]string{
		"localhost:4000":       "localhost:4000",
		"127.0.0.1:11434":      "127.0.0.1:11434",
		"[::1]:8080":           "[::1]:8080",
		"LLM.corp.example:443": "llm.corp.example:443",
	} {
		got, err := CheckHost(in)
		if err != nil || got != want {
			t.Errorf("CheckHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
