//go:build linux

package sandbox

import (
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kulehq/kule/kernel/internal/runner"
)

func TestWhatTheCommandGets(t *testing.T) {
	skipUnlessSandbox(t)
	tests := map[string]struct {
		spec  func(w *world) runner.Spec
		check func(t *testing.T, w *world, r result)
	}{
		"reveal-read-only-with-sibling-link": {
			spec: func(w *world) runner.Spec {
				return runner.Spec{Reveal: []string{"../shared"}, Args: []string{"sh", "-c",
					"cat ../shared/lib.go && cat " + filepath.Join(w.shared, "lib.go") + " && (echo x >> ../shared/lib.go && echo WROTE || echo refused)"}}
			},
			check: func(t *testing.T, w *world, r result) {
				want := "package shared // revealedpackage shared // revealedrefused\n"
				if r.stdout != want {
					t.Fatalf("stdout %q, want %q (stderr %s)", r.stdout, want, r.stderr)
				}
			},
		},
		"path-and-sdk-folders-stay-readable": {
			spec: func(w *world) runner.Spec {
				bin := filepath.Join(w.home, "code", "bin")
				os.MkdirAll(bin, 0o755)
				os.WriteFile(filepath.Join(bin, "mytool"), []byte("#!/bin/sh\necho tool ran\n"), 0o755)
				return runner.Spec{Env: append(append([]string(nil), w.env...), "PATH="+bin+":/usr/bin:/bin"), Args: []string{"mytool"}}
			},
			check: func(t *testing.T, w *world, r result) {
				if r.stdout != "tool ran\n" {
					t.Fatalf("stdout %q, stderr %s", r.stdout, r.stderr)
				}
			},
		},
		"per-task-caches": {
			spec: func(w *world) runner.Spec {
				return runner.Spec{Env: append(append([]string(nil), w.env...), "GOCACHE=/person/cache"), Args: []string{"sh", "-c",
					"for v in CARGO_HOME npm_config_cache PIP_CACHE_DIR UV_CACHE_DIR GOCACHE GOMODCACHE NUGET_PACKAGES YARN_CACHE_FOLDER npm_config_store_dir; do eval echo $v=\\$$v; done; mkdir -p $GOCACHE && touch $GOCACHE/x && echo ok"}}
			},
			check: func(t *testing.T, w *world, r result) {
				for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
					if line == "ok" {
						continue
					}
					if _, v, _ := strings.Cut(line, "="); !strings.HasPrefix(v, w.task.Dir+"/cache/") {
						t.Errorf("cache outside the task: %s", line)
					}
				}
				if !strings.HasSuffix(r.stdout, "ok\n") {
					t.Fatalf("cache not writable: %s %s", r.stdout, r.stderr)
				}
			},
		},
		"devices-by-name": {
			spec: func(w *world) runner.Spec {
				return runner.Spec{Args: []string{"sh", "-c", "ls /dev | tr '\\n' ' '; head -c 4 /dev/urandom | wc -c; echo x > /dev/null && echo null-ok"}}
			},
			check: func(t *testing.T, w *world, r result) {
				want := "fd full null ptmx pts random shm stderr stdin stdout tty urandom zero 4\nnull-ok\n"
				if r.stdout != want {
					t.Fatalf("stdout %q, want %q (%s)", r.stdout, want, r.stderr)
				}
			},
		},
		"own-processes-only": {
			spec: func(w *world) runner.Spec {
				// The shell expands the glob itself, with no child of its own alive, so what it
				// lists is exactly what the command can see. (A pipeline through ls and grep raced:
				// ls could read /proc before the shell had forked grep.)
				return runner.Spec{Args: []string{"sh", "-c", "echo $$; echo /proc/[0-9]*"}}
			},
			check: func(t *testing.T, w *world, r result) {
				// The helper (PID 1) and the shell: nothing else.
				if r.stdout != "2\n/proc/1 /proc/2\n" {
					t.Fatalf("stdout %q, want the helper and the shell only (%s)", r.stdout, r.stderr)
				}
			},
		},
		"allow-write": {
			spec: func(w *world) runner.Spec {
				d := filepath.Join(w.root, "out")
				os.MkdirAll(d, 0o755)
				return runner.Spec{AllowWrite: []string{d}, Args: []string{"sh", "-c", "echo hi > " + d + "/f && cat " + d + "/f"}}
			},
			check: func(t *testing.T, w *world, r result) {
				if r.stdout != "hi\n" {
					t.Fatalf("stdout %q (%s)", r.stdout, r.stderr)
				}
			},
		},
		"hide": {
			spec: func(w *world) runner.Spec {
				os.WriteFile(filepath.Join(w.task.Copy, ".env"), []byte(marker), 0o644)
				return runner.Spec{Hide: []string{".env", filepath.Join(w.home, "notes.txt")}, Args: []string{"sh", "-c",
					"cat .env " + filepath.Join(w.home, "notes.txt") + "; echo done"}}
			},
			check: func(t *testing.T, w *world, r result) {
				if r.stdout != "done\n" {
					t.Fatalf("stdout %q", r.stdout)
				}
			},
		},
		"file-size-limit": {
			spec: func(w *world) runner.Spec {
				return runner.Spec{FileSizeLimit: 1000, Args: []string{"sh", "-c", "head -c 5000 /dev/zero > big 2>/dev/null; wc -c < big"}}
			},
			check: func(t *testing.T, w *world, r result) {
				if strings.TrimSpace(r.stdout) != "1000" {
					t.Fatalf("a 5000-byte write under a 1000-byte limit left %q bytes", r.stdout)
				}
			},
		},
		"signal-exit-code": {
			spec: func(w *world) runner.Spec { return runner.Spec{Args: []string{"sh", "-c", "kill -TERM $$"}} },
			check: func(t *testing.T, w *world, r result) {
				if r.code != 128+15 {
					t.Fatalf("exit %d, want 143", r.code)
				}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			tc.check(t, w, w.run(t, w.sandbox(), tc.spec(w)))
		})
	}
}

func TestProxyBridge(t *testing.T) {
	skipUnlessSandbox(t)
	t.Parallel()
	w := newWorld(t)
	proxy := echoServer(t)
	_, port, _ := net.SplitHostPort(proxy)
	script := `printf 'hello through the bridge' | timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/` + port + `; cat >&3; head -c 24 <&3'; echo; echo "$HTTP_PROXY $https_proxy $ALL_PROXY"`
	r := w.run(t, w.sandbox(), runner.Spec{Network: runner.NetworkProxy, ProxyAddr: proxy, Args: []string{"bash", "-c", script}})
	u := "http://127.0.0.1:" + port
	want := "hello through the bridge\n" + u + " " + u + " " + u + "\n"
	if r.stdout != want {
		t.Fatalf("stdout %q, want %q (stderr %s)", r.stdout, want, r.stderr)
	}
	// --no-network: the same port is shut.
	r = w.run(t, w.sandbox(), runner.Spec{Network: runner.NetworkNone, ProxyAddr: proxy, Args: []string{"bash", "-c",
		`(exec 3<>/dev/tcp/127.0.0.1/` + port + `) 2>/dev/null && echo CONNECTED || echo refused; echo "[$HTTP_PROXY]"`}})
	if r.stdout != "refused\n[]\n" {
		t.Fatalf("--no-network: stdout %q", r.stdout)
	}
}

// With ProxyServe (the proxy in kule's own process) each connection the
// command makes is handed to it as the TCP socket itself, and nothing
// dials the proxy's address.
func TestProxyBridgeHandsConnections(t *testing.T) {
	skipUnlessSandbox(t)
	t.Parallel()
	w := newWorld(t)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var dialled atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			dialled.Add(1)
			c.Close()
		}
	}()
	var mu sync.Mutex
	var kinds []string
	serve := func(c net.Conn) error {
		mu.Lock()
		kinds = append(kinds, fmt.Sprintf("%T", c))
		mu.Unlock()
		go func() {
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			io.Copy(c, c)
		}()
		return nil
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	script := `for i in 1 2; do printf "hello $i" | timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/` + port + `; cat >&3; head -c 7 <&3'; echo; done`
	r := w.run(t, w.sandbox(), runner.Spec{Network: runner.NetworkProxy, ProxyAddr: ln.Addr().String(), ProxyServe: serve, Args: []string{"bash", "-c", script}})
	if want := "hello 1\nhello 2\n"; r.stdout != want {
		t.Fatalf("stdout %q, want %q (stderr %s)", r.stdout, want, r.stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"*net.TCPConn", "*net.TCPConn"}, kinds); diff != "" {
		t.Fatalf("connections handed (-want +got):\n%s", diff)
	}
	if n := dialled.Load(); n != 0 {
		t.Fatalf("the proxy's address was dialled %d times beside the handing", n)
	}
}

func TestCancelKillsEverything(t *testing.T) {
	skipUnlessSandbox(t)
	t.Parallel()
	w := newWorld(t)
	ctx, cancel := context.WithCancel(context.Background())
	// Cancelled once the command runs, its child with it (a cancel before
	// the command starts is another path: nothing ran).
	go func() { waitForFile(w.landed("started")); cancel() }()
	code, err := w.sandbox().Run(ctx, runner.Spec{Task: w.task, Dir: w.task.Copy, Env: w.env, Args: []string{"sh", "-c", "sleep 31339 & echo > started; sleep 31339"}})
	if err != nil || code != 128+9 {
		t.Fatalf("code %d err %v, want 137", code, err)
	}
	if pid := processWith("31339"); pid != "" {
		t.Fatalf("process %s outlived the cancelled command", pid)
	}
}

// processWith is the pid of a process whose command line holds marker, or "".
func processWith(marker string) string {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(b), marker) {
			return e.Name()
		}
	}
	return ""
}

// When Run returns, nothing the command started is left: kule goes on (and
// scans the copy) as soon as PID 1 tells the exit code, so PID 1 must end
// every process of the namespace first. A writer left in the background
// must be gone and its file still.
func TestNothingOutlivesTheRun(t *testing.T) {
	skipUnlessSandbox(t)
	t.Parallel()
	w := newWorld(t)
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	spec := runner.Spec{Task: w.task, Dir: w.task.Copy, Env: w.env, Stdout: devnull, Stderr: devnull,
		Args: []string{"sh", "-c", `sh -c 'while :; do echo 31337x >> bg.txt; done' & while [ ! -s bg.txt ]; do :; done`}}
	if code, err := w.sandbox().Run(context.Background(), spec); err != nil || code != 0 {
		t.Fatalf("code %d err %v", code, err)
	}
	if pid := processWith("31337x"); pid != "" {
		t.Fatalf("process %s, started in the background, outlived the run", pid)
	}
	w.fold(t)
	bg := filepath.Join(w.task.Copy, "bg.txt")
	before, err := os.Stat(bg)
	if err != nil {
		t.Fatalf("the background writer wrote nothing: %v", err)
	}
	time.Sleep(100 * time.Millisecond)
	if after, _ := os.Stat(bg); after.Size() != before.Size() {
		t.Fatalf("bg.txt grew from %d to %d bytes after the run returned", before.Size(), after.Size())
	}
}

func TestFailClosed(t *testing.T) {
	w := newWorld(t)
	defer func() { probeHook = nil }()
	// A stand-in for a system without these: the probe is faked, because
	// this machine has both and turning them off needs a reboot.
	probeHook = func() Availability {
		return Availability{UserNS: false, UserNSWhy: "sysctl user.max_user_namespaces is 0", LandlockABI: 0}
	}
	s := w.sandbox()
	_, err := s.Run(context.Background(), runner.Spec{Task: w.task, Args: []string{"true"}, Env: w.env})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "no user namespaces") || !strings.Contains(err.Error(), "no Landlock") || !strings.Contains(err.Error(), "--accept-weaker on") {
		t.Fatalf("err = %v", err)
	}
	// Accepted: it runs, and says so.
	probeHook = func() Availability { return Availability{UserNS: true, LandlockABI: 0} }
	var warn strings.Builder
	s.AcceptWeaker, s.Warn = true, &warn
	r := w.run(t, s, runner.Spec{Args: []string{"sh", "-c", "echo ran"}})
	if r.stdout != "ran\n" || !strings.Contains(warn.String(), "WEAKER ISOLATION") || !strings.Contains(warn.String(), "no Landlock") {
		t.Fatalf("stdout %q warn %q", r.stdout, warn.String())
	}
	// Landlock's first ABI counts as none (it would refuse every move in the
	// copy): refused, or, accepted, run without it and said so.
	probeHook = func() Availability { return Availability{UserNS: true, LandlockABI: 1} }
	s.AcceptWeaker = false
	if _, err := s.Run(context.Background(), runner.Spec{Task: w.task, Args: []string{"true"}, Env: w.env}); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "Landlock ABI 1 only") {
		t.Fatalf("Landlock ABI 1: err = %v, want the run refused", err)
	}
	warn.Reset()
	s.AcceptWeaker = true
	r = w.run(t, s, runner.Spec{Args: []string{"sh", "-c", "mkdir -p a b && echo x > a/f && mv a/f b/f && echo moved"}})
	if r.stdout != "moved\n" || !strings.Contains(warn.String(), "Landlock ABI 1 only") {
		t.Fatalf("Landlock ABI 1 accepted: stdout %q stderr %q warn %q", r.stdout, r.stderr, warn.String())
	}
}

func TestBadSpec(t *testing.T) {
	w := newWorld(t)
	tests := map[string]runner.Spec{
		"dir-outside-copy":       {Dir: w.home, Args: []string{"true"}},
		"allow-write-ssh":        {AllowWrite: []string{filepath.Join(w.home, ".ssh")}, Args: []string{"true"}},
		"allow-write-whole-home": {AllowWrite: []string{w.home}, Args: []string{"true"}},
		"reveal-kule-home":       {Reveal: []string{w.other}, Args: []string{"true"}},
		"no-command":             {},
		"bad-proxy":              {ProxyAddr: "nowhere", Args: []string{"true"}},
	}
	for name, spec := range tests {
		t.Run(name, func(t *testing.T) {
			spec.Task = w.task
			if _, err := w.sandbox().Run(context.Background(), spec); err == nil {
				t.Fatal("ran")
			}
		})
	}
	// A NUL byte cannot reach a program: the spec is refused by name, not
	// taken for a plan of another build.
	for name, spec := range map[string]runner.Spec{
		"nul-in-argument": {Args: []string{"printf", "a\x00b"}},
		"nul-in-env":      {Args: []string{"true"}, Env: []string{"A=b\x00c"}},
		"nul-in-dir":      {Args: []string{"true"}, Dir: w.task.Copy + "/a\x00b"},
	} {
		spec.Task = w.task
		_, err := w.sandbox().Run(context.Background(), spec)
		if !errors.Is(err, ErrBadSpec) || !strings.Contains(err.Error(), "NUL byte") {
			t.Errorf("%s: err = %v, want the spec refused for its NUL byte", name, err)
		}
	}
	_ = strconv.Itoa
}

// A helper built without cgo has no PID 1 (it is C): it refuses the run
// before anything is mounted, and says how to build it.
func TestHelperWithoutCgoRefuses(t *testing.T) {
	skipUnlessSandbox(t)
	w := newWorld(t)
	s := w.sandbox()
	s.Exe = buildHelper(t, nil, "CGO_ENABLED=0")
	ran := filepath.Join(w.task.Copy, "ran")
	_, err := s.Run(context.Background(), runner.Spec{Task: w.task, Env: w.env, Args: []string{"touch", ran}})
	if !errors.Is(err, ErrSetup) || !strings.Contains(err.Error(), "built without cgo") || !strings.Contains(err.Error(), "make build") {
		t.Fatalf("err = %v, want the run refused for a helper without cgo", err)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("the command ran")
	}
}

// Kule's home under /tmp (as in tests elsewhere): the task's own /tmp
// replaces /tmp, and the copy must still be there, writable.
func TestKuleHomeUnderTmp(t *testing.T) {
	skipUnlessSandbox(t)
	t.Parallel()
	w := newWorldAt(t, t.TempDir())
	r := w.run(t, w.sandbox(), runner.Spec{Args: []string{"sh", "-c", "cat main.go; echo x > made; ls /tmp | wc -l; cat " + filepath.Join(w.home, ".ssh", "id_ed25519")}})
	if !strings.HasPrefix(r.stdout, "package main // the copy") {
		t.Fatalf("stdout %q stderr %s", r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, marker) {
		t.Fatalf("credential read: %s", r.stdout)
	}
	if _, err := os.Stat(filepath.Join(w.task.Copy, "made")); err != nil {
		t.Fatal(err)
	}
}

// Work the run waits for (Spec.Ready) goes on while the helper starts; when
// it fails, the command never starts and Run says why.
func TestReadyGatesTheCommand(t *testing.T) {
	skipUnlessSandbox(t)
	t.Parallel()
	w := newWorld(t)
	marker := filepath.Join(w.task.Copy, "ran")
	errPolicy := errors.New("the policy could not be read")
	for _, network := range []runner.Network{runner.NetworkProxy, runner.NetworkNone} {
		proxy := echoServer(t)
		spec := runner.Spec{Task: w.task, Dir: w.task.Copy, Env: w.env, Network: network, ProxyAddr: proxy,
			Args:  []string{"touch", marker},
			Ready: func() error { time.Sleep(50 * time.Millisecond); return errPolicy }}
		code, err := w.sandbox().Run(context.Background(), spec)
		if !errors.Is(err, errPolicy) || code != -1 {
			t.Fatalf("network %d: code %d err %v, want the Ready error", network, code, err)
		}
		if _, err := os.Lstat(marker); err == nil {
			t.Fatalf("network %d: the command ran although Ready failed", network)
		}
		// Ready: the command runs once it returns.
		spec.Ready = func() error { time.Sleep(50 * time.Millisecond); return nil }
		if code, err := w.sandbox().Run(context.Background(), spec); err != nil || code != 0 {
			t.Fatalf("network %d: code %d err %v", network, code, err)
		}
		w.fold(t)
		if _, err := os.Lstat(marker); err != nil {
			t.Fatalf("network %d: the command did not run once ready: %v", network, err)
		}
		os.Remove(marker)
	}
}

// The command gets every signal at its default, even those kule itself was
// started with ignored (as under nohup), and blocks none: PID 1 holds its
// own signals blocked and ignores the terminal's stop signals. So does the
// exec stage (no user namespaces, weaker isolation accepted), which becomes
// the command itself.
func TestCommandGetsSignalsAtTheirDefault(t *testing.T) {
	skipUnlessSandbox(t)
	w := newWorld(t)
	signal.Ignore(syscall.SIGHUP, syscall.SIGUSR2)
	defer signal.Reset(syscall.SIGHUP, syscall.SIGUSR2)
	defer func() { probeHook = nil }()
	real := Probe()
	for _, stage := range []string{HelperStageInit, HelperStageExec} {
		s := w.sandbox()
		probeHook = nil
		if stage == HelperStageExec {
			probeHook = func() Availability { return Availability{UserNSWhy: "faked off", LandlockABI: real.LandlockABI} }
			s.AcceptWeaker, s.Warn = true, io.Discard
		}
		r := w.run(t, s, runner.Spec{Args: []string{"grep", "-E", "^Sig(Ign|Blk)", "/proc/self/status"}})
		want := "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n"
		if r.stdout != want {
			t.Errorf("stage %s: the command's signals:\n%s\nwant none blocked or ignored (stderr %s)", stage, r.stdout, r.stderr)
		}
	}
}

// An empty PATH finds nothing, not a program of that name in the working
// directory (the copy, which the agent writes).
func TestEmptyPathFindsNothing(t *testing.T) {
	skipUnlessSandbox(t)
	w := newWorld(t)
	tool := filepath.Join(w.task.Copy, "tool")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\necho planted\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(tool)
	var out strings.Builder
	_, err := w.sandbox().Run(context.Background(), runner.Spec{Task: w.task, Env: []string{"PATH="}, Args: []string{"tool"}, Stdout: &out, Stderr: &out})
	if err == nil || !strings.Contains(err.Error(), "not found in the command's PATH") || strings.Contains(out.String(), "planted") {
		t.Fatalf("err = %v, output %q; want the command not found", err, out.String())
	}
}

// The helper itself refuses what is not a whole plan of its build, before
// it mounts anything: a stale kule-sandbox, a plan cut short. It is run
// here by hand, in namespaces of its own, with what kule would give it.
func TestHelperRefusesWhatIsNotAPlanOfItsBuild(t *testing.T) {
	skipUnlessSandbox(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	frame := func(b []byte) []byte { return append(binary.LittleEndian.AppendUint32(nil, uint32(len(b))), b...) }
	other := wire(&plan{Args: []string{"true"}, Shape: "Args:[]string;"})
	for name, tc := range map[string]struct {
		in   []byte
		want string
	}{
		"another build": {frame(other), "is from another build of kule"},
		"not a plan":    {frame([]byte("{\"Args\":[\"true\"]}")), "is from another build of kule"},
		"cut short":     {frame(other)[:20], "cut short"},
		"too long":      {[]byte{0xff, 0xff, 0xff, 0xff}, "too long"},
		"nothing":       {nil, ""}, // kule refused the plan and says why itself
	} {
		t.Run(name, func(t *testing.T) {
			planR, planW, _ := os.Pipe()
			statR, statW, _ := os.Pipe()
			doneR, doneW, _ := os.Pipe()
			defer statR.Close()
			defer doneR.Close()
			cmd := exec.Command(exe, HelperArg, HelperStageInit)
			cmd.Args[0] = "kule-sandbox"
			cmd.ExtraFiles = []*os.File{planR, statW, doneW}
			uid, gid := os.Getuid(), os.Getgid()
			cmd.SysProcAttr = &syscall.SysProcAttr{
				Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID,
				UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
				GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			planR.Close()
			statW.Close()
			doneW.Close()
			planW.Write(tc.in)
			planW.Close()
			status, _ := io.ReadAll(statR)
			err := cmd.Wait()
			if code, _ := runner.ExitCode(err); code != 125 || !strings.Contains(string(status), tc.want) {
				t.Fatalf("helper: exit %d, status %q; want 125 and %q", code, status, tc.want)
			}
		})
	}
}

// Built against musl, whose constructors get no arguments, the helper finds
// its stage in /proc/self/cmdline, and the run is the same sandbox: PID 1
// and the command alone, no capabilities and no new privileges, the
// credentials hidden.
func TestHelperBuiltWithMusl(t *testing.T) {
	skipUnlessSandbox(t)
	t.Parallel()
	cc, err := exec.LookPath("musl-gcc")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("musl-gcc is needed on CI (apt-get install musl-tools)")
		}
		t.Skip("musl-gcc is not installed (apt-get install musl-tools)")
	}
	w := newWorld(t)
	helper := buildHelper(t, staticHelper, "CGO_ENABLED=1", "CC="+cc)
	if f, err := elf.Open(helper); err != nil {
		t.Fatal(err)
	} else {
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Fatal("the musl helper is not static: it names a loader")
			}
		}
		f.Close()
	}
	s := w.sandbox()
	s.Exe = helper
	r := w.run(t, s, runner.Spec{Args: []string{"sh", "-c",
		"echo $$; echo /proc/[0-9]*; grep -E 'NoNewPrivs|CapEff|CapBnd' /proc/self/status; cat " + filepath.Join(w.home, ".ssh", "id_ed25519") + " 2>&1 || echo hidden"}})
	if want := "2\n/proc/1 /proc/2\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nNoNewPrivs:\t1\n"; !strings.HasPrefix(r.stdout, want) || !strings.HasSuffix(r.stdout, "hidden\n") || strings.Contains(r.stdout, marker) {
		t.Fatalf("stdout %q, want it to start %q and the key hidden (stderr %s)", r.stdout, want, r.stderr)
	}
}
