package sandbox

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kulehq/kule/kernel/internal/runner"
)

func TestFilterEnv(t *testing.T) {
	tests := map[string]struct {
		in            []string
		kept, dropped []string
	}{
		"ordinary": {[]string{"PATH=/bin", "LANG=C", "GIT_AUTHOR_NAME=Ada"}, []string{"PATH=/bin", "LANG=C", "GIT_AUTHOR_NAME=Ada"}, nil},
		"by-name": {[]string{"GITHUB_TOKEN=x", "AWS_SECRET_ACCESS_KEY=x", "OPENAI_API_KEY=x", "DB_PASSWORD=x", "NPM_CONFIG__AUTH=x"},
			nil, []string{"GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "OPENAI_API_KEY", "DB_PASSWORD", "NPM_CONFIG__AUTH"}},
		"by-value":         {[]string{"X=ghp_0123456789abcdef0123", "Y=AKIAABCDEFGHIJKLMNOP", "Z=sk-short"}, []string{"Z=sk-short"}, []string{"X", "Y"}},
		"plumbing-quietly": {[]string{"SSH_AUTH_SOCK=/run/a", "DBUS_SESSION_BUS_ADDRESS=unix:path=/x", "KULE_HOME=/k"}, nil, nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			kept, dropped := FilterEnv(tc.in)
			if d := cmp.Diff(tc.kept, kept); d != "" {
				t.Errorf("kept (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.dropped, dropped); d != "" {
				t.Errorf("dropped (-want +got):\n%s", d)
			}
		})
	}
}

func TestCheckDevice(t *testing.T) {
	for _, name := range []string{"sda", "vda", "mem", "kmem", "input/event0", "tty0", "console", "../etc/passwd", "/dev/null", "nvme0n1", "loop0"} {
		if err := checkDevice(name); err == nil {
			t.Errorf("device %q was allowed", name)
		}
	}
	if err := checkDevice("null"); err != nil {
		t.Errorf("null: %v", err)
	}
}

func TestGoProxyFromCache(t *testing.T) {
	home := t.TempDir()
	if _, ok := goProxyFromCache([]string{"HOME=" + home}); ok {
		t.Fatal("a proxy from a cache that does not exist")
	}
	dl := home + "/go/pkg/mod/cache/download"
	if err := os.MkdirAll(dl, 0o755); err != nil {
		t.Fatal(err)
	}
	got, ok := goProxyFromCache([]string{"HOME=" + home, "GOPROXY=https://example.invalid"})
	if want := "GOPROXY=file://" + dl + ",https://example.invalid"; !ok || got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// A variable the task sets is the task's alone: the person's own value of
// it never comes first (a program takes the first of two). The proxy's
// placeholder for a key whose name FilterEnv does not know as a secret
// replaces the real key, and the proxy's bundle the person's
// SSL_CERT_FILE.
func TestTaskEnvWins(t *testing.T) {
	spec := runner.Spec{
		Env:     []string{"PATH=/bin", "STRIPE_KEY=rk_live_real", "SSL_CERT_FILE=/home/p/roots.pem"},
		TaskEnv: []string{"STRIPE_KEY=kule-secret-0123", "SSL_CERT_FILE=/tmp/kule-ca-bundle.pem"},
	}
	for _, taskWins := range []bool{false, true} {
		env := commandEnv(spec, &plan{Cache: "/c"}, taskWins)
		var keys []string
		for _, kv := range env {
			if strings.HasPrefix(kv, "STRIPE_KEY=") || strings.HasPrefix(kv, "SSL_CERT_FILE=") {
				keys = append(keys, kv)
			}
		}
		want := []string{"STRIPE_KEY=kule-secret-0123", "SSL_CERT_FILE=/tmp/kule-ca-bundle.pem"}
		if !taskWins {
			want = []string{"STRIPE_KEY=rk_live_real", "SSL_CERT_FILE=/home/p/roots.pem", "STRIPE_KEY=kule-secret-0123", "SSL_CERT_FILE=/tmp/kule-ca-bundle.pem"}
		}
		if d := cmp.Diff(want, keys); d != "" {
			t.Errorf("taskWins %v (-want +got):\n%s", taskWins, d)
		}
	}
}
