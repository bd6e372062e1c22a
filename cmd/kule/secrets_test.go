package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runKule(t *testing.T, stdin string, args ...string) (string, error) {
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
