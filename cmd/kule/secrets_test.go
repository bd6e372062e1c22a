package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func runKule(t testing.TB, stdin string, args ...string) (string, error) {
	t.Helper()
	root := rootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func TestSecretsCommands(t *testing.T) {
	home := t.TempDir()
	t.Setenv("KULE_HOME", home)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "") // the key file path
	out, err := runKule(t, "sk_live_piped_value\n", "secrets", "add", "STRIPE_KEY", "--host", "api.stripe.com")
	if err != nil || !strings.Contains(out, "kept STRIPE_KEY for api.stripe.com") || !strings.Contains(out, "key file") {
		t.Fatalf("add: %v\n%s", err, out)
	}
	if _, err := runKule(t, "v", "secrets", "add", "X"); err == nil {
		t.Errorf("add without --host passed")
	}
	if _, err := runKule(t, "v", "secrets", "add", "X", "value-as-arg", "--host", "h.example"); err == nil {
		t.Errorf("a value given as an argument was accepted")
	}
	out, err = runKule(t, "", "secrets", "list")
	if err != nil || !strings.Contains(out, "sealed with the key file") || !strings.Contains(out, "STRIPE_KEY") || strings.Contains(out, "piped") {
		t.Fatalf("list: %v\n%s", err, out)
	}
	filepath.Walk(home, func(p string, fi os.FileInfo, err error) error {
		if b, _ := os.ReadFile(p); bytes.Contains(b, []byte("sk_live_piped_value")) {
			t.Errorf("%s holds the value in the clear", p)
		}
		return nil
	})
	if out, err := runKule(t, "", "secrets", "remove", "STRIPE_KEY"); err != nil || !strings.Contains(out, "removed") {
		t.Fatalf("remove: %v %s", err, out)
	}
	if _, err := runKule(t, "", "secrets", "remove", "STRIPE_KEY"); err == nil {
		t.Errorf("removing twice passed")
	}
}

// TestSecretsAddFromTerminal types the value into a real pseudo-terminal
// (python3's pty module drives the kule binary) and checks it is not echoed.
func TestSecretsAddFromTerminal(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3 is needed on CI")
		}
		t.Skip("python3 is not installed")
	}
	home := t.TempDir()
	script := `
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], "secrets", "add", "TTY_KEY", "--host", "h.example"])
out = b""
while b"not shown" not in out:
    out += os.read(fd, 1024)
os.write(fd, b"typed-secret-value\r")
while True:
    try:
        b = os.read(fd, 1024)
    except OSError:
        break
    if not b:
        break
    out += b
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace"))
sys.exit(os.waitstatus_to_exitcode(status))
`
	cmd := exec.Command(py, "-c", script, os.Args[0])
	cmd.Env = append(os.Environ(), "KULE_AS_CLI=1", "KULE_HOME="+home, "DBUS_SESSION_BUS_ADDRESS=")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "kept TTY_KEY") {
		t.Fatalf("kule secrets add on a terminal: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "typed-secret-value") {
		t.Fatalf("the value was echoed:\n%s", out)
	}
	t.Setenv("KULE_HOME", home)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	st, err := openSecrets()
	if err != nil {
		t.Fatal(err)
	}
	if s, err := st.Get("TTY_KEY"); err != nil || s.Value != "typed-secret-value" {
		t.Fatalf("kept %q, %v", s.Value, err)
	}
}

// A secret kept for an IP address could never be sent: the proxy reads a
// request inside TLS only with a certificate of its run authority, which
// signs none for an address. kule secrets add refuses it and says why.
func TestSecretsAddRefusesAnAddress(t *testing.T) {
	t.Setenv("KULE_HOME", t.TempDir())
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	for _, h := range []string{"127.0.0.1", "10.0.0.5", "::1", "[::1]"} {
		_, err := runKule(t, "v\n", "secrets", "add", "X", "--host", h)
		if err == nil || !strings.Contains(err.Error(), "signs no certificate for an address") || !strings.Contains(err.Error(), "nothing was kept") {
			t.Errorf("--host %s: %v", h, err)
		}
	}
	if out, _ := runKule(t, "", "secrets", "list"); strings.Contains(out, "X") && !strings.Contains(out, "no secrets") {
		t.Errorf("a refused secret was kept:\n%s", out)
	}
}
