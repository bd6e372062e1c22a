// Command kule-desktop is Kule's control room in a window of its own: the
// app that `kule app` opens in a browser, in a WebKitGTK view with a menu
// bar, and the system's notifications when a question waits for the person
// or a run ends.
//
// It starts the daemon (through `kule app --print-url`) when none runs and
// shows what that daemon serves; closing the window stops nothing — the
// daemon, its tasks' runs and their questions go on, and the window can be
// opened again at any time. Opened from a launcher it takes PATH from the
// person's login shell first, so the kule it starts, and the agents that
// kule starts, find what a terminal finds (npx under nvm or volta).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"golang.org/x/term"
)

// version is set at link time by make dist, as kule's is.
var version string

func init() {
	// GTK belongs to the thread that initialised it: main's.
	runtime.LockOSThread()
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("kule-desktop", flag.ContinueOnError)
	shot := fs.String("screenshot", "", "write a PNG of the screen to this file once the task list shows, then close (for tests and bug reports)")
	showVersion := fs.Bool("version", false, "print the version and exit")
	width := fs.Int("width", 1280, "the window's width")
	height := fs.Int("height", 800, "the window's height")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: kule-desktop [flags]\n\nKule's control room in a window; it starts the daemon when none runs, and closing it stops nothing.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "kule-desktop: takes no arguments (got %q)\n", fs.Args())
		return 2
	}
	if *showVersion {
		fmt.Println("kule-desktop", versionString())
		return 0
	}
	if err := open(*shot, *width, *height); err != nil {
		fmt.Fprintln(os.Stderr, "kule-desktop:", err)
		if *shot == "" && (os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != "") {
			showError("Kule could not open its control room", err.Error())
		}
		return 1
	}
	return 0
}

func versionString() string {
	if version != "" {
		return version
	}
	return "(built from source)"
}

func open(shot string, width, height int) error {
	ctx := context.Background()
	// Started from a terminal, PATH is already the shell's. From a launcher
	// (no terminal on stdin) it is the session's: ask the login shell.
	if !term.IsTerminal(int(os.Stdin.Fd())) {
		if p := loginPATH(ctx, os.Getenv("SHELL"), 5*time.Second); p != "" {
			os.Setenv("PATH", mergePATH(p, os.Getenv("PATH")))
		}
	}
	kule, err := findKule()
	if err != nil {
		return err
	}
	home, err := kuleHome()
	if err != nil {
		return err
	}
	appURL, err := startApp(ctx, kule)
	if err != nil {
		return err
	}
	u, err := url.Parse(appURL)
	if err != nil || u.Host == "" {
		return fmt.Errorf("kule app gave %q, not an address", appURL)
	}
	origin := u.Scheme + "://" + u.Host + "/"

	wctx, stop := context.WithCancel(ctx)
	defer stop()
	if n, err := newDesktopNotifier(); err == nil {
		go watchEvents(wctx, home, n, nil)
	} else {
		fmt.Fprintln(os.Stderr, "kule-desktop: no system notifications (no session bus):", err)
	}
	window.onMenu = func(action int) {
		switch action {
		case actBrowser:
			if err := exec.Command(kule, "app").Run(); err != nil {
				fmt.Fprintln(os.Stderr, "kule-desktop: kule app:", err)
			}
		case actLog:
			_ = exec.Command("xdg-open", filepath.Join(home, "kuled.log")).Start()
		case actAbout:
			showAbout(versionString())
		}
	}
	var shotErr error
	window.onShot = func(ok bool, text string) {
		if !ok {
			shotErr = fmt.Errorf("no screenshot: %s", text)
			return
		}
		// what the task list read, for the test beside the picture
		fmt.Println(strings.TrimSpace(text))
	}
	runWindow(appURL, origin, "Kule", shot, width, height)
	return shotErr
}

// findKule is the kule beside this program (a package puts both in
// /usr/bin), else the one on PATH.
func findKule() (string, error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "kule")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := exec.LookPath("kule")
	if err != nil {
		return "", fmt.Errorf("kule is neither beside kule-desktop nor on PATH (%s): install it, or put it on the PATH of your login shell", os.Getenv("PATH"))
	}
	return p, nil
}

// kuleHome is the home kule uses: $KULE_HOME, else ~/.kule (the rule of
// kule's task store).
func kuleHome() (string, error) {
	if h := os.Getenv("KULE_HOME"); h != "" {
		return filepath.Abs(h)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("kule home: set KULE_HOME or HOME: %w", err)
	}
	return filepath.Join(home, ".kule"), nil
}

// startApp has kule start the daemon when none runs and give the app's
// one-time address.
func startApp(ctx context.Context, kule string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, kule, "app", "--print-url")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s app --print-url: %v: %s", kule, err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}
