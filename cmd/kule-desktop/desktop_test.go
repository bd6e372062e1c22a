package main

import (
	"bufio"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/kulehq/kule/cmd/internal/daemon/client"
)

// need finds a tool the test runs; without it the test skips, except on CI,
// which installs them all.
func need(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing; .ci/run installs it", name)
		}
		t.Skipf("%s is not installed", name)
	}
	return p
}

func goBuild(t *testing.T, out, pkg string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", out, pkg)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
}

// startXvfb starts a virtual screen on a free display and returns its
// DISPLAY value.
func startXvfb(t *testing.T) string {
	t.Helper()
	xvfb := need(t, "Xvfb")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(xvfb, "-displayfd", "3", "-screen", "0", "1280x860x24", "-nolisten", "tcp")
	cmd.ExtraFiles = []*os.File{w}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(r).ReadString('\n')
	r.Close()
	n, err2 := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || err2 != nil {
		t.Fatalf("Xvfb gave no display: %q %v %v", line, err, err2)
	}
	return ":" + strconv.Itoa(n)
}

// fakeNotifications owns org.freedesktop.Notifications on a private session
// bus and keeps what it is asked to show.
type fakeNotifications struct {
	mu    sync.Mutex
	notes []note
}

func (f *fakeNotifications) Notify(app string, id uint32, icon, summary, body string, actions []string, hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.notes = append(f.notes, note{Summary: summary, Body: body})
	return uint32(len(f.notes)), nil
}

func (f *fakeNotifications) all() []note {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]note(nil), f.notes...)
}

// startSessionBus runs a private dbus-daemon with a fake notification
// server on it and returns the bus address.
func startSessionBus(t *testing.T) (string, *fakeNotifications) {
	t.Helper()
	bin := need(t, "dbus-daemon")
	addr := "unix:path=" + filepath.Join(t.TempDir(), "bus")
	cmd := exec.Command(bin, "--session", "--nofork", "--nopidfile", "--address="+addr, "--print-address=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil { // printed once it listens
		t.Fatalf("dbus-daemon: %v", err)
	}
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	f := &fakeNotifications{}
	if err := conn.Export(f, "/org/freedesktop/Notifications", "org.freedesktop.Notifications"); err != nil {
		t.Fatal(err)
	}
	if r, err := conn.RequestName("org.freedesktop.Notifications", dbus.NameFlagDoNotQueue); err != nil || r != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own the notifications name: %v %v", r, err)
	}
	return addr, f
}

func stopDaemon(t *testing.T, home string) {
	b, err := os.ReadFile(filepath.Join(home, "kuled.lock"))
	if pid, err2 := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && err2 == nil && pid > 1 {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
}

// TestDesktopShowsTaskList opens kule-desktop as a launcher does (no
// terminal, the session's short PATH, kule only on the PATH of the login
// shell's profile) under Xvfb: it finds kule through the login shell,
// starts the daemon, shows the task list with the task made before, and
// writes a screenshot. Closing the window leaves the daemon running, and a
// question put to that daemon becomes a system notification.
func TestDesktopShowsTaskList(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kule and opens a window: not with -short")
	}
	need(t, "bash")
	display := startXvfb(t)
	busAddr, notes := startSessionBus(t)

	tmp := t.TempDir()
	kuleDir, deskDir, home := filepath.Join(tmp, "opt", "kule", "bin"), filepath.Join(tmp, "desk"), filepath.Join(tmp, "person")
	goBuild(t, filepath.Join(kuleDir, "kule"), "../kule")
	goBuild(t, filepath.Join(deskDir, "kule-desktop"), ".")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	// the person's profile, where version managers put their folders
	if err := os.WriteFile(filepath.Join(home, ".bash_profile"), []byte("echo welcome back\nexport PATH=\""+kuleDir+":$PATH\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	khome := filepath.Join(home, ".kule")
	t.Cleanup(func() { stopDaemon(t, khome) })

	folder := filepath.Join(tmp, "notes")
	if err := os.MkdirAll(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(folder, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	kule := func(args ...string) string {
		cmd := exec.Command(filepath.Join(kuleDir, "kule"), args...)
		cmd.Env = append(os.Environ(), "KULE_HOME="+khome)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kule %v: %v\n%s", args, err, b)
		}
		return string(b)
	}
	id := strings.Fields(kule("new", folder))[1]
	kule("name", id, "desktop sample")

	shot := filepath.Join(tmp, "shot.png")
	cmd := exec.Command(filepath.Join(deskDir, "kule-desktop"), "--screenshot", shot)
	cmd.Env = []string{"HOME=" + home, "SHELL=/bin/bash", "PATH=/usr/bin:/bin", "DISPLAY=" + display,
		"DBUS_SESSION_BUS_ADDRESS=" + busAddr, "WEBKIT_DISABLE_COMPOSITING_MODE=1", "LANG=C.UTF-8"}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output() // stdin is /dev/null, as from a launcher
	if err != nil {
		t.Fatalf("kule-desktop: %v\nstdout: %s\nstderr: %s", err, out, stderr.String())
	}
	if !strings.Contains(string(out), "desktop sample") || !strings.Contains(string(out), id) {
		t.Fatalf("the task list read %q, want the task %s named desktop sample", out, id)
	}
	checkScreenshot(t, shot)
	if keep := os.Getenv("KULE_DESKTOP_SHOT"); keep != "" { // to look at it
		b, _ := os.ReadFile(shot)
		_ = os.WriteFile(keep, b, 0o644)
	}

	// The window is closed; the daemon it started serves on.
	c := client.New(khome)
	if !c.Running(context.Background()) {
		t.Fatalf("the daemon stopped with the window; its log:\n%s", readFile(khome, "kuled.log"))
	}

	// A question waiting for the person becomes a notification.
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", busAddr)
	n, err := newDesktopNotifier()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan struct{})
	go watchEvents(ctx, khome, n, func() { close(ready) })
	<-ready
	go func() {
		_, _ = c.Ask(ctx, client.Question{Task: id, Kind: "connection", Title: "Connect to example.org:443?", Detail: "asked by the test", Subject: "example.org:443"})
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := notes.all()
		if len(got) > 0 {
			if got[0].Summary != "Kule needs you: Connect to example.org:443?" || got[0].Body != "asked by the test" {
				t.Fatalf("notification %+v", got[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no notification for the waiting question")
		}
		time.Sleep(50 * time.Millisecond) // polling the fake server, not synchronising
	}
}

func readFile(dir, name string) string {
	b, _ := os.ReadFile(filepath.Join(dir, name))
	return string(b)
}

// checkScreenshot reads the PNG back: the screen's size, and drawn (the
// page's white, its blue buttons and its text), not a blank screen.
func checkScreenshot(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("the screenshot is no PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1280 || b.Dy() != 860 {
		t.Fatalf("screenshot of %v, want the 1280x860 screen", b)
	}
	colours := map[[3]uint32]bool{}
	blue := 0
	for y := 0; y < 800; y += 2 {
		for x := 0; x < 1280; x += 2 {
			r, g, b, _ := img.At(x, y).RGBA()
			colours[[3]uint32{r >> 8, g >> 8, b >> 8}] = true
			if b>>8 > 180 && r>>8 < 100 {
				blue++
			}
		}
	}
	if len(colours) < 20 || blue < 100 {
		t.Fatalf("the screenshot looks blank: %d colours, %d blue pixels", len(colours), blue)
	}
}
