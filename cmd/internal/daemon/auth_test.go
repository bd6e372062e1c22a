package daemon

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kulehq/kule/cmd/internal/daemon/client"
)

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// open requests a launch address and returns the status and the cookie set.
func open(t *testing.T, url string) (int, *http.Cookie) {
	t.Helper()
	resp, err := noRedirect.Get(url)
	must(t, err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		if c.Name == cookieName {
			return resp.StatusCode, c
		}
	}
	return resp.StatusCode, nil
}

// TestLaunchCodeOpensOnce: the address `kule app` hands to xdg-open (whose
// arguments every local user reads) logs a browser in once; read from the
// process list and used again — or used after its minute — it lets nobody
// in. With the spending taken away, the second use gets the session.
func TestLaunchCodeOpensOnce(t *testing.T) {
	d := startDaemon(t, Config{})
	url := d.URL()
	if strings.Contains(url, d.Token()) {
		t.Fatalf("the launch address %s carries the session token", url)
	}
	if code, c := open(t, url); code != http.StatusSeeOther || c == nil || c.Value != d.Token() {
		t.Fatalf("first use: %d %+v, want 303 and the session cookie", code, c)
	}
	if code, c := open(t, url); code != http.StatusUnauthorized || c != nil {
		t.Fatalf("second use of one launch code: %d %+v, want 401 and no cookie", code, c)
	}

	// An expired code: the clock moves past the minute.
	late := d.URL()
	var mu sync.Mutex
	now := time.Now().Add(launchTTL + time.Second)
	d.launch.mu.Lock()
	d.launch.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	d.launch.mu.Unlock()
	if code, c := open(t, late); code != http.StatusUnauthorized || c != nil {
		t.Fatalf("a code past its minute: %d %+v, want 401 and no cookie", code, c)
	}
	d.launch.mu.Lock()
	d.launch.now = nil
	d.launch.mu.Unlock()

	// The guard taken away: the code read from xdg-open's arguments logs
	// the attacker in after the person.
	launchOnce = false
	defer func() { launchOnce = true }()
	again := d.URL()
	open(t, again)
	if code, c := open(t, again); code != http.StatusSeeOther || c == nil {
		t.Fatalf("without spending, a second use should log in (the attack): %d %+v", code, c)
	}
}

// TestAppPortOnOwnLoopback: the app's port listens on the home's own
// 127.x.y.z, kept in the home across starts, so its cookie's host is no
// other local server's.
func TestAppPortOnOwnLoopback(t *testing.T) {
	t.Parallel()
	k := newKernel(t)
	d := startDaemon(t, Config{Kernel: k})
	host, _, err := net.SplitHostPort(d.Addr())
	must(t, err)
	ip := net.ParseIP(host).To4()
	if ip == nil || ip[0] != 127 || host == "127.0.0.1" || ip[1] == 0 {
		t.Fatalf("the app listens on %s, want a 127.x.y.z of its own", d.Addr())
	}
	b, err := os.ReadFile(AppAddressPath(k.Home()))
	must(t, err)
	if strings.TrimSpace(string(b)) != host {
		t.Fatalf("app-address holds %q, the daemon listens on %s", b, host)
	}
	if fi, err := os.Stat(AppAddressPath(k.Home())); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("app-address mode: %v %v", fi.Mode(), err)
	}
	again, err := appAddress(k.Home())
	must(t, err)
	if again.String() != host {
		t.Fatalf("the next start would listen on %s, not %s", again, host)
	}
	// A home's address that is not Kule's to use is refused, with advice.
	other := newKernel(t)
	must(t, os.WriteFile(AppAddressPath(other.Home()), []byte("127.0.0.1\n"), 0o600))
	if _, err := Start(Config{Kernel: other, Log: discardLog()}); err == nil || !strings.Contains(err.Error(), "delete the file") {
		t.Fatalf("a daemon on 127.0.0.1 from app-address: %v", err)
	}
}

func TestParseAppAddress(t *testing.T) {
	t.Parallel()
	for in, ok := range map[string]bool{
		"127.5.6.7\n": true, "127.255.0.1": true, "127.0.0.1": false, "127.0.0.0": false, "127.1.2.255": false,
		"10.0.0.1": false, "::1": false, "127.1.2.3 ": false, "127.01.2.3": false, "": false, "localhost": false,
	} {
		if _, err := ParseAppAddress([]byte(in)); (err == nil) != ok {
			t.Errorf("ParseAppAddress(%q) = %v, want ok=%v", in, err, ok)
		}
	}
	for range 200 {
		if ip := pickAppAddress(); func() error { _, err := ParseAppAddress([]byte(ip.String())); return err }() != nil {
			t.Fatalf("picked %s, which the parser refuses", ip)
		}
	}
}

func FuzzParseAppAddress(f *testing.F) {
	f.Add([]byte("127.5.6.7\n"))
	f.Add([]byte("127.0.0.1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ip, err := ParseAppAddress(b)
		if err != nil {
			return
		}
		if ip[0] != 127 || ip.String() == "127.0.0.1" {
			t.Fatalf("accepted %q as %s", b, ip)
		}
	})
}

// TestTaskOnCredentialFolderRefused: with the app's token, a task on ~/.ssh
// would read the key through the API (a command's output). The API
// refuses the folder, and Kule's own home; with the refusal taken away,
// the key comes out.
func TestTaskOnCredentialFolderRefused(t *testing.T) {
	user := t.TempDir()
	ssh := filepath.Join(user, ".ssh")
	must(t, os.MkdirAll(ssh, 0o700))
	must(t, os.WriteFile(filepath.Join(ssh, "id_ed25519"), []byte("-----BEGIN OPENSSH PRIVATE KEY----- secret\n"), 0o600))
	k := newKernel(t)
	d := startDaemon(t, Config{Kernel: k, UserHome: user})
	c := client.New(d.home)
	ctx := context.Background()
	for _, folder := range []string{ssh, user, k.Home(), "/"} {
		var made map[string]any
		err := c.Do(ctx, "POST", "/api/tasks", map[string]string{"folder": folder}, &made)
		if err == nil || !strings.Contains(err.Error(), "nothing was made") {
			t.Fatalf("a task on %s: %v %v, want a refusal that says nothing was made", folder, err, made)
		}
	}
	ts, err := k.Tasks()
	must(t, err)
	if len(ts) != 0 {
		t.Fatalf("refused folders made %d tasks", len(ts))
	}

	refuseFolders = false
	defer func() { refuseFolders = true }()
	var made struct{ Task TaskView }
	must(t, c.Do(ctx, "POST", "/api/tasks", map[string]string{"folder": ssh}, &made))
	var step Step
	must(t, c.Do(ctx, "POST", "/api/tasks/"+made.Task.ID+"/exec", ExecRequest{Command: "cat id_ed25519"}, &step))
	if !strings.Contains(step.Output, "PRIVATE KEY") {
		t.Fatalf("without the refusal the key should come out (the attack): %+v", step)
	}
}
