//go:build linux

package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/kulehq/kule/kernel/internal/sandbox"
)

// The plugins of these tests start as Kule starts them: in the sandbox, then
// confined further by ConfineMain. Each also runs unsandboxed where that
// proves the attempt would have worked there (the test can fail).

func sandboxOK() bool { return len(sandbox.Probe().Missing()) == 0 }

func needSandbox(t testing.TB) {
	t.Helper()
	if m := sandbox.Probe().Missing(); len(m) > 0 {
		if os.Getenv("CI") != "" {
			t.Fatalf("the sandbox is not available on CI: %s", strings.Join(m, "; "))
		}
		t.Skipf("the sandbox is not available here: %s", strings.Join(m, "; "))
	}
}

// sandboxedHost is a host whose plugins run in the sandbox, with home as the
// person's home (credentials under it are hidden).
func sandboxedHost(t testing.TB, home string, builtins ...Builtin) *Host {
	t.Helper()
	needSandbox(t)
	h := New(t.TempDir(), Options{
		Self:         selfExe(t),
		Builtins:     builtins,
		CallTimeout:  5 * time.Second,
		StartTimeout: 20 * time.Second,
		Logger:       hclog.New(&hclog.LoggerOptions{Name: "kule", Output: io.Discard}),
		Sandbox:      &sandbox.Sandbox{Home: home},
	})
	t.Cleanup(func() { removeTree(h.pluginsDir()) })
	t.Cleanup(h.Close)
	return h
}

func TestSandboxedBuiltinAndThirdParty(t *testing.T) {
	h := sandboxedHost(t, "", txtBuiltin("lines"))
	ctx := context.Background()
	d := h.DifferFor(ctx, "a.txt")
	if d == nil || !d.Builtin() {
		t.Fatalf("DifferFor = %v, want the built-in", d)
	}
	es, err := d.Entities(ctx, "a.txt", []byte("alpha one\nbeta two\n"))
	if err != nil || len(es) != 2 || es[1].ID() != "line beta" {
		t.Fatalf("built-in in the sandbox: entities = %+v, %v", es, err)
	}

	if _, err := h.Install(makePlugin(t, "good", nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Approve("good"); err != nil {
		t.Fatal(err)
	}
	h2 := New(h.home, h.opts)
	t.Cleanup(h2.Close)
	d = h2.DifferFor(ctx, "a.ini")
	if d == nil || d.Name() != "good" {
		t.Fatalf("DifferFor = %v, want third-party good", d)
	}
	es, err = d.Entities(ctx, "a.ini", []byte("[x]\nk = v\n"))
	if err != nil || len(es) != 2 {
		t.Fatalf("third-party in the sandbox: entities = %+v, %v", es, err)
	}
	if n := h2.Notices(); len(n) > 0 {
		t.Errorf("notices = %q, want none", n)
	}
	// Nothing of the run is left behind.
	h2.Close()
	h.Close()
	if ents, _ := os.ReadDir(filepath.Join(h.home, "run")); len(ents) > 0 {
		t.Errorf("left in %s/run: %v", h.home, ents)
	}
}

// TestSandboxedMisbehaving: crash, hang and garbage cost one file in the
// sandbox as they do outside it.
func TestSandboxedMisbehaving(t *testing.T) {
	h := sandboxedHost(t, "", txtBuiltin("crash"), txtBuiltin("hang"))
	ctx := context.Background()
	crash := &Differ{handle{h: h, kind: "differ", name: "crash", builtin: true}}
	if _, err := crash.Entities(ctx, "a.txt", []byte("boom\n")); !errors.Is(err, ErrCall) {
		t.Errorf("crash = %v, want ErrCall", err)
	}
	if es, err := crash.Entities(ctx, "a.txt", []byte("fine\n")); err != nil || len(es) != 1 {
		t.Errorf("after a crash the plugin restarts: %+v, %v", es, err)
	}
	hang := &Differ{handle{h: h, kind: "differ", name: "hang", builtin: true}}
	// Started under the usual timeout first: a slow start (a race-built
	// plugin in its sandbox, on a loaded machine) must not be taken for
	// the hang.
	if _, err := hang.Entities(ctx, "a.txt", []byte("fine\n")); err != nil {
		t.Fatalf("the hang plugin did not start: %v", err)
	}
	h.opts.CallTimeout = time.Second
	if _, err := hang.Entities(ctx, "a.txt", []byte("hang\n")); !errors.Is(err, ErrCall) || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("hang = %v, want a deadline error", err)
	}
}

// TestSandboxFailsClosed: when the sandbox cannot be set up the plugin does
// not run, and the error says so.
func TestSandboxFailsClosed(t *testing.T) {
	h := sandboxedHost(t, "", txtBuiltin("lines"))
	// A helper executable that is not kule: the sandbox cannot start.
	h.opts.Sandbox.Exe = "/nonexistent/kule"
	d := &Differ{handle{h: h, kind: "differ", name: "lines", builtin: true}}
	_, err := d.Entities(context.Background(), "a.txt", []byte("a\n"))
	if !errors.Is(err, ErrSandbox) {
		t.Fatalf("entities with no sandbox = %v, want ErrSandbox", err)
	}
	if !strings.Contains(err.Error(), "did not run") {
		t.Errorf("error %q does not say the plugin did not run", err)
	}
	// A kind without a profile does not start; a transport without its
	// proxy does not either.
	if _, err := h.sandboxRunner(LaunchSpec{Kind: "nonesuch", Name: "x", Args: []string{"kule"}}); !errors.Is(err, ErrNotBuilt) {
		t.Errorf("start of a kind without a profile = %v, want ErrNotBuilt", err)
	}
	if _, err := h.sandboxRunner(LaunchSpec{Kind: "transport", Name: "slack", Args: []string{"kule"}}); !errors.Is(err, ErrSandbox) || !strings.Contains(err.Error(), "no proxy") {
		t.Errorf("transport without a proxy = %v, want ErrSandbox: no proxy", err)
	}
}

// TestSandboxAttacks: a plugin that tries to write a file, read the person's
// ~/.ssh or any other file, list a folder, connect out (TCP, the daemon's
// Unix socket, an abstract socket), run a shell or signal the kernel's
// process gets nowhere. The same plugin unsandboxed succeeds at each, which
// proves the attempts are real.
func TestSandboxAttacks(t *testing.T) {
	needSandbox(t)
	// The person's home and an ordinary folder, outside /tmp (which the
	// sandbox replaces anyway), so hiding and Landlock are what refuse.
	home, outside := persistentDir(t, "home"), persistentDir(t, "outside")
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(home, ".ssh", "id_ed25519")
	if err := os.WriteFile(key, []byte("SECRET-PRIVATE-KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	tcp, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	accepted := make(chan string, 8)
	serve := func(ln net.Listener, what string) {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- what
			c.Close()
		}
	}
	go serve(tcp, "tcp")
	abstract := fmt.Sprintf("@kule-plugin-attack-%d", os.Getpid())
	abs, err := net.Listen("unix", abstract)
	if err != nil {
		t.Fatal(err)
	}
	defer abs.Close()
	go serve(abs, "abstract")
	usr1 := make(chan os.Signal, 4)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)

	run := func(t *testing.T, h *Host, builtin bool) map[string]string {
		t.Helper()
		// The daemon's socket lives in Kule's home.
		daemon := filepath.Join(h.home, "kuled.sock")
		os.Remove(daemon)
		dl, err := net.Listen("unix", daemon)
		if err != nil {
			t.Fatal(err)
		}
		// Open until the subtest ends, after its drain: a connection the
		// plugin made waits in the socket's backlog, and closing the
		// listener when run returns dropped it before serve accepted it
		// (the unsandboxed run then missed its "daemon" reach).
		t.Cleanup(func() { dl.Close() })
		go serve(dl, "daemon")
		attempts := []string{
			"write " + filepath.Join(outside, "pwned"),
			"write " + filepath.Join(h.home, "pwned"),
			"write /tmp/pwned-by-plugin",
			"read " + key,
			"read /etc/passwd",
			"list /",
			"dial tcp " + tcp.Addr().String(),
			"dial unix " + daemon,
			"dial unix " + abstract,
			fmt.Sprintf("kill %d", os.Getpid()),
			"exec /bin/sh",
		}
		src := strings.Join(attempts, "\n") + "\n"
		var d *Differ
		if builtin {
			d = &Differ{handle{h: h, kind: "differ", name: "attacker", builtin: true}}
		} else {
			if _, err := h.Install(makePlugin(t, "attacker", nil)); err != nil {
				t.Fatal(err)
			}
			if _, err := h.Approve("attacker"); err != nil {
				t.Fatal(err)
			}
			d = &Differ{handle{h: h, kind: "differ", name: "attacker"}}
		}
		es, err := d.Entities(context.Background(), "a.txt", []byte(src))
		if err != nil {
			t.Fatalf("attacker: %v", err)
		}
		got := map[string]string{}
		for _, e := range es {
			cmd, res, _ := strings.Cut(e.Name, " = ")
			for _, a := range attempts {
				if a == cmd {
					got[strings.Fields(a)[0]+" "+label(a, h.home, outside)] = res
				}
			}
		}
		return got
	}
	// drain collects what reached the test's listeners and signal: until
	// want arrived (the unsandboxed runs, so none of theirs is left to be
	// blamed on the next run; 30 s ends a broken one), or for 300 ms when
	// nothing should.
	drain := func(want int) []string {
		var got []string
		wait := 300 * time.Millisecond
		if want > 0 {
			wait = 30 * time.Second
		}
		deadline := time.After(wait)
		for want == 0 || len(got) < want {
			select {
			case w := <-accepted:
				got = append(got, w)
			case <-usr1:
				got = append(got, "SIGUSR1")
			case <-deadline:
				return got
			}
		}
		return got
	}

	for _, builtin := range []bool{true, false} {
		name := map[bool]string{true: "built-in", false: "third-party"}[builtin]
		t.Run(name+"/sandboxed", func(t *testing.T) {
			h := sandboxedHost(t, home, txtBuiltin("attacker"))
			got := run(t, h, builtin)
			if len(got) != 11 {
				t.Fatalf("attempts answered = %v, want 11", got)
			}
			for a, res := range got {
				t.Logf("%s = %s", a, res)
				if !strings.HasPrefix(res, "refused") {
					t.Errorf("%s = %s, want refused", a, res)
				}
				if strings.Contains(res, "SECRET") {
					t.Errorf("%s leaked the key: %s", a, res)
				}
			}
			for _, p := range []string{filepath.Join(outside, "pwned"), filepath.Join(h.home, "pwned"), "/tmp/pwned-by-plugin"} {
				if _, err := os.Stat(p); err == nil {
					os.Remove(p)
					t.Errorf("the plugin wrote %s", p)
				}
			}
			if reached := drain(0); len(reached) > 0 {
				t.Errorf("the plugin reached %v", reached)
			}
		})
		t.Run(name+"/unsandboxed", func(t *testing.T) {
			h := newHost(t, txtBuiltin("attacker"))
			got := run(t, h, builtin)
			for _, p := range []string{filepath.Join(outside, "pwned"), filepath.Join(h.home, "pwned"), "/tmp/pwned-by-plugin"} {
				os.Remove(p)
			}
			for a, res := range got {
				if !strings.HasPrefix(res, "ok") {
					t.Errorf("unsandboxed %s = %s, want ok (else the sandboxed refusal proves nothing)", a, res)
				}
			}
			if reached := drain(4); len(reached) != 4 {
				t.Errorf("unsandboxed the plugin reached %v, want tcp, daemon, abstract and SIGUSR1", reached)
			}
		})
	}
}

// label names an attempt without the test's temp paths.
func label(a, home, outside string) string {
	_, arg, _ := strings.Cut(a, " ")
	arg = strings.ReplaceAll(arg, home, "KULE_HOME")
	arg = strings.ReplaceAll(arg, outside, "OUTSIDE")
	return arg
}

// persistentDir is a fresh directory under /var/tmp (t.TempDir where there
// is none), removed at the end of the test.
func persistentDir(t *testing.T, name string) string {
	d, err := os.MkdirTemp("/var/tmp", "kule-plugin-attack-"+name+"-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}
