package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/kulehq/kule/cmd/internal/daemon"
	"github.com/kulehq/kule/cmd/internal/daemon/client"
	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/sdk/extension"
)

// TestExtLifecycle walks an extension from kule ext new to a command run in
// the sandboxed host, through approval, a change that waits for approval
// again, a review note in kule status, disable and remove.
func TestExtLifecycle(t *testing.T) {
	dir := t.TempDir()
	c := cli{t: t, home: filepath.Join(dir, "home")}
	work := filepath.Join(dir, "work")
	os.MkdirAll(work, 0o755)
	// run runs kule in work, where ext new and ext pack write.
	run := func(args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command(os.Args[0], args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "KULE_AS_CLI=1", "KULE_HOME="+c.home)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run("ext", "new", "me.hello"); err != nil || !strings.Contains(out, "wrote me.hello/") {
		t.Fatalf("ext new: %v\n%s", err, out)
	}
	out, err := run("ext", "pack", "me.hello")
	if err != nil || !strings.Contains(out, "into me.hello-0.1.0.kulext") {
		t.Fatalf("ext pack: %v\n%s", err, out)
	}
	pkg := filepath.Join(work, "me.hello-0.1.0.kulext")
	c.must("ext", "install", pkg)
	// the shell completes its id and its commands
	for args, want := range map[string]string{
		"__complete ext approve ": "me.hello\t0.1.0 · waits for approval",
		"__complete ext show me":  "me.hello\t",
		"__complete ext run ":     "me.hello.hello\t",
	} {
		if out, err := c.stdout(strings.Split(args, " ")...); err != nil || !strings.Contains(out, want) {
			t.Errorf("kule %s: %v\n%s\nwant %q", args, err, out, want)
		}
	}
	if out, err := c.kule("", "ext", "run", "me.hello.hello"); err == nil || !strings.Contains(out, "waits for approval") || !strings.Contains(out, "nothing of it ran") {
		t.Fatalf("run before approval: %v\n%s", err, out)
	}
	out = c.must("ext", "show", "me.hello")
	for _, want := range []string{"sha256:", "tasks.read    see the list of tasks", "command:     me.hello.hello", "never:", "state:       waits for approval"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	if out, err := c.kule("", "ext", "approve", "me.hello", "--sha256", strings.Repeat("0", 64)); err == nil || !strings.Contains(out, "changed since you looked") {
		t.Fatalf("approve of another sha256: %v\n%s", err, out)
	}
	c.must("ext", "approve", "me.hello")
	if out := c.must("ext", "run", "me.hello.hello"); !strings.Contains(out, "Hello from me.hello: 0 task(s).") {
		t.Fatalf("run: %s", out)
	}
	if out := c.must("ext", "list"); !strings.Contains(out, "me.hello  0.1.0    approved") {
		t.Fatalf("list: %s", out)
	}

	// A review note in kule status.
	folder := filepath.Join(dir, "folder")
	os.MkdirAll(folder, 0o755)
	os.WriteFile(filepath.Join(folder, "a.txt"), []byte("a\n"), 0o644)
	out = c.must("new", folder)
	id, _, _ := strings.Cut(strings.TrimPrefix(out, "task "), " ")
	c.must("exec", id, "--", "sh", "-c", "echo x > todo.txt")
	if out := c.must("status", id); !strings.Contains(out, "notes from extensions:\n  todo.txt: this adds a TODO file  [me.hello]\n") {
		t.Fatalf("status lacks the note:\n%s", out)
	}
	if out, err := c.stdout("status", "--json", id); err != nil || !strings.Contains(out, `"extension_notes"`) {
		t.Fatalf("status --json: %v\n%s", err, out)
	}

	// Changed after approval: the same version with other code waits.
	main := filepath.Join(work, "me.hello", "main.js")
	os.WriteFile(main, []byte(`kule.commands.register('hello', () => 'changed');`), 0o644)
	run("ext", "pack", "me.hello")
	c.must("ext", "install", pkg)
	if out, err := c.kule("", "ext", "run", "me.hello.hello"); err == nil || !strings.Contains(out, "package changed since approval") {
		t.Fatalf("changed package ran: %v\n%s", err, out)
	}
	if out := c.must("status", id); strings.Contains(out, "notes from extensions") {
		t.Fatalf("an unapproved extension added notes:\n%s", out)
	}
	c.must("ext", "approve", "me.hello")
	if out := c.must("ext", "run", "me.hello.hello"); strings.TrimSpace(out) != "changed" {
		t.Fatalf("run after approval: %q", out)
	}
	c.must("ext", "disable", "me.hello")
	if out, err := c.kule("", "ext", "run", "me.hello.hello"); err == nil || !strings.Contains(out, "disabled") {
		t.Fatalf("disabled ran: %v\n%s", err, out)
	}
	c.must("ext", "enable", "me.hello")
	c.must("ext", "remove", "me.hello")
	if out := c.must("ext", "list"); !strings.Contains(out, "no extensions installed") {
		t.Fatalf("list after remove: %s", out)
	}
}

// TestExtAbuseInTheSandboxedHost: in the real host, started in the plugin
// sandbox, an endless loop is stopped at the time limit, and a call into
// Kule for what the extension was not granted (or for commit) is refused
// by the kernel.
func TestExtAbuseInTheSandboxedHost(t *testing.T) {
	dir := t.TempDir()
	c := cli{t: t, home: filepath.Join(dir, "home")}
	src := filepath.Join(dir, "bad")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "extension.json"), []byte(`{"id":"me.bad","name":"Bad","version":"1.0.0","permissions":["commands"],
 "commands":[{"id":"spin","title":"Spin"},{"id":"take","title":"Take"},{"id":"ok","title":"OK"}]}`), 0o644)
	os.WriteFile(filepath.Join(src, "main.js"), []byte(`
kule.commands.register('spin', () => { for (;;) {} });
kule.commands.register('take', async () => {
  const out = [];
  for (const m of ['tasks.list', 'files.read', 'commit', 'secrets.get']) {
    try { await kule.call(m, 'x'); out.push(m + ': allowed'); } catch (e) { out.push(m + ': ' + e.message); }
  }
  return out.join('\n');
});
kule.commands.register('ok', () => typeof require + ' ' + typeof fetch + ' ' + typeof XMLHttpRequest);`), 0o644)
	pkg := filepath.Join(dir, "bad.kulext")
	c.must("ext", "pack", src, "-o", pkg)
	c.must("ext", "install", pkg)
	c.must("ext", "approve", "me.bad")
	out, err := c.kule("", "ext", "run", "me.bad.spin")
	if err == nil || !strings.Contains(out, "ran past its time limit") {
		t.Fatalf("spin: %v\n%s", err, out)
	}
	out = c.must("ext", "run", "me.bad.take")
	for _, want := range []string{"tasks.list: extension call denied: me.bad called \"tasks.list\", which needs the permission \"tasks.read\"",
		"files.read: extension call denied", "commit: extension call denied: me.bad called \"commit\", which is not a call Kule offers", "secrets.get: extension call denied"} {
		if !strings.Contains(out, want) {
			t.Errorf("take lacks %q:\n%s", want, out)
		}
	}
	// stdout alone: on a loaded machine stderr may carry the plugin
	// host's log of a slow exit.
	if out, err := c.stdout("ext", "run", "me.bad.ok"); err != nil || strings.TrimSpace(out) != "undefined undefined undefined" {
		t.Fatalf("globals: %q %v", out, err)
	}
	// A package with a link in its folder does not pack.
	os.Symlink("/etc/passwd", filepath.Join(src, "passwd"))
	if out, err := c.kule("", "ext", "pack", src, "-o", pkg); err == nil || !strings.Contains(out, "is a link") {
		t.Fatalf("pack with a link: %v\n%s", err, out)
	}
}

// TestExtCommandFromTheDaemon: the app's palette runs an approved
// extension's command through the daemon, in the real sandboxed host,
// which the daemon keeps: three commands start at most two hosts (the one
// loaded and a spare). kule status, with the daemon running, gets its
// review notes from the daemon's hosts.
func TestExtCommandFromTheDaemon(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	c := cli{t: t, home: home}
	for _, ex := range []string{"hello-panel", "todo-notes"} {
		pkg := filepath.Join(dir, ex+".kulext")
		c.must("ext", "pack", filepath.Join("..", "..", "extensions", "examples", ex), "-o", pkg)
		c.must("ext", "install", pkg)
		c.must("ext", "approve", "kule."+ex)
	}
	k, err := kernel.New(kernel.Config{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	var launches, reads atomic.Int32
	d, err := daemon.Start(daemon.Config{Kernel: k, Idle: -1, Log: hclog.NewNullLogger(),
		Extensions: func() *kernel.ExtensionRunner {
			r := extRunner(k, home, io.Discard)
			launch := r.Launch
			r.Launch = func(ctx context.Context) (*extension.HostClient, func(), error) {
				launches.Add(1)
				return launch(ctx)
			}
			r.Services = countedServices{r.Services, &reads}
			return r
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go d.Serve(ctx)
	defer d.Shutdown()
	cl := client.New(home)
	for deadline := time.Now().Add(30 * time.Second); !cl.Running(ctx); {
		if time.Now().After(deadline) {
			t.Fatal("waited 30 s for the daemon to answer on its socket")
		}
		time.Sleep(10 * time.Millisecond)
	}
	var out struct {
		Result string `json:"result"`
	}
	for range 3 {
		if err := cl.Do(ctx, "POST", "/api/extensions/kule.hello-panel/commands/greet", map[string]any{"args": []string{"Ada"}}, &out); err != nil || out.Result != "Hello, Ada!" {
			t.Fatalf("greet from the daemon: %+v %v", out, err)
		}
	}
	if n := launches.Load(); n > 2 {
		t.Fatalf("three commands started %d hosts in the daemon", n)
	}
	folder := filepath.Join(dir, "folder")
	os.MkdirAll(folder, 0o755)
	os.WriteFile(filepath.Join(folder, "a.txt"), []byte("a\n"), 0o644)
	id, _, _ := strings.Cut(strings.TrimPrefix(c.must("new", folder), "task "), " ")
	c.must("exec", id, "--", "sh", "-c", "echo 'x TODO' > todo.txt")
	if out := c.must("status", id); !strings.Contains(out, "todo.txt: this adds a TODO  [kule.todo-notes]") {
		t.Fatalf("status with the daemon lacks the note:\n%s", out)
	}
	if reads.Load() == 0 {
		t.Fatal("kule status did not ask the daemon's hosts for its notes (the hook read no file through the daemon)")
	}
}

// countedServices counts the calls extensions make into Kule through them.
type countedServices struct {
	svc interface {
		Call(context.Context, *extension.Manifest, string, json.RawMessage) (json.RawMessage, error)
	}
	n *atomic.Int32
}

func (c countedServices) Call(ctx context.Context, m *extension.Manifest, method string, args json.RawMessage) (json.RawMessage, error) {
	c.n.Add(1)
	return c.svc.Call(ctx, m, method, args)
}

// TestExtDevAsksOncePerChange: kule ext dev packs and installs the folder,
// asks for approval once for each package (not again while it is
// unchanged), and runs the command once approved; a change asks again, and
// refused, nothing runs.
func TestExtDevAsksOncePerChange(t *testing.T) {
	dir := t.TempDir()
	c := cli{t: t, home: filepath.Join(dir, "home")}
	src := filepath.Join(dir, "me.dev")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "extension.json"), []byte(`{"id":"me.dev","name":"Dev","version":"0.1.0","permissions":["commands"],"commands":[{"id":"hi","title":"Hi"}]}`), 0o644)
	os.WriteFile(filepath.Join(src, "main.js"), []byte(`kule.commands.register('hi', (a) => 'hi ' + a[0]);`), 0o644)
	dev := func(answer string) string {
		t.Helper()
		cmd := exec.Command(os.Args[0], "ext", "dev", src, "hi", "ada", "--once")
		cmd.Env = append(os.Environ(), "KULE_AS_CLI=1", "KULE_HOME="+c.home)
		cmd.Stdin = strings.NewReader(answer)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("ext dev: %v\n%s", err, out)
		}
		return string(out)
	}
	out := dev("y\n")
	if !strings.Contains(out, "approve me.dev 0.1.0 (sha256 ") || !strings.Contains(out, "me.dev.hi: hi ada") {
		t.Fatalf("first round:\n%s", out)
	}
	if out := dev(""); strings.Contains(out, "approve me.dev") || !strings.Contains(out, "me.dev.hi: hi ada") {
		t.Fatalf("unchanged, asked again or did not run:\n%s", out)
	}
	os.WriteFile(filepath.Join(src, "main.js"), []byte(`kule.commands.register('hi', () => 'changed');`), 0o644)
	if out := dev("n\n"); !strings.Contains(out, "approve me.dev") || !strings.Contains(out, "nothing of it ran") || strings.Contains(out, "changed") && strings.Contains(out, "me.dev.hi:") {
		t.Fatalf("changed and refused:\n%s", out)
	}
}
