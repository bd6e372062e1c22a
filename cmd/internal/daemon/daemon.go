// Package daemon is `kule daemon`: one per Kule home, it owns the tasks, the
// runs and the questions they wait on, and serves a JSON API with a live
// event stream over $KULE_HOME/kuled.sock (0600, peer uid checked) and over a
// loopback HTTP port that carries the control room web app (embedded; no
// network at run time), guarded by a per-start token, Host and Origin checks.
//
// Effects are judged by the kernel's one judging path (judging.go); the
// semantic review and the remembered rules plug in through the small
// interfaces of hooks.go; the proxy and the ACP permission path post to the
// Questions queue.
package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/agentrun"
)

// DefaultIdle is how long the daemon waits with nothing to do before exiting.
const DefaultIdle = 10 * time.Minute

// Config builds a Daemon.
type Config struct {
	Kernel   *kernel.Kernel
	Idle     time.Duration // 0 = DefaultIdle; negative = never
	HTTPAddr string        // "" = the home's own loopback address (loopback.go), a free port
	Reviewer Reviewer      // nil = NoNames
	Previews Previews      // the Preview panel's plugin host (preview.go); nil = none
	Rules    Rules         // nil = MemoryRules
	// RunnerFor picks how one command of the app runs in t (the sandbox, as
	// `kule exec` does) and may fill spec's isolation fields; nil uses the
	// kernel's Runner.
	RunnerFor func(t *kernel.Task, spec *kernel.RunSpec) (kernel.Runner, error)
	// Agents says which agents can start here and what the others need
	// (kernel/internal/agents' Check); nil lists none.
	Agents func() ([]AgentView, error)
	// AgentSet reads the agent profiles a prompt from the app may run (nil:
	// the app runs no agents); AgentOptions may change a run's options
	// (tests: the direct runner).
	AgentSet     func() (*kernel.AgentSet, error)
	AgentOptions func(*agentrun.Options)
	// MeterEvery is how often a running run's usage against its limits
	// is published ("limits" events); 0 = a second.
	MeterEvery time.Duration
	// Extensions starts approved extensions for the app's commands and
	// review notes (each in its own sandboxed host, kept running by the
	// daemon's pool); nil: the app lists extensions but runs none.
	Extensions func() *kernel.ExtensionRunner
	Log        hclog.Logger
	// UserHome is the person's home folder, whose credential folders are
	// never a task's folder; "" = os.UserHomeDir.
	UserHome string
}

// Daemon is a running kule daemon.
type Daemon struct {
	cfg    Config
	k      *kernel.Kernel
	home   string
	Bus    *Bus
	Q      *Queue
	token  string
	launch launches
	lockF  *os.File
	sockL  net.Listener
	httpL  net.Listener
	srvs   []*http.Server
	log    hclog.Logger
	active atomic.Int64 // requests in flight, streams open, runs going
	last   atomic.Int64 // unix nanos of the last activity
	done   chan struct{}
	once   sync.Once
	runs   *runs
	watch  *watcher
	// watchStop ends the watcher Serve starts (watching), which then
	// closes watchDone.
	watchStop, watchDone chan struct{}
	watching             atomic.Bool
	meet                 meets
	// attached are the chat transports driven (transports.go)
	attached attachedHosts
	// The Terminal panel's shells (terminal.go), made at first use.
	termOnce sync.Once
	termSet  *terminals
	// The extension hosts kept running (extensions.go), made at first use.
	extOnce sync.Once
	extP    *kernel.ExtensionPool
	// The agents' trials from Settings (agenttry.go).
	trials trials
}

// SocketPath is where the daemon of home listens.
func SocketPath(home string) string { return filepath.Join(home, "kuled.sock") }

// LockPath is the lock that keeps one daemon per home.
func LockPath(home string) string { return filepath.Join(home, "kuled.lock") }

// Start takes the home's daemon lock, opens the questions, and listens on the
// socket and the loopback port. It fails with ErrDaemonRunning when another
// daemon holds the lock. Serve runs it.
func Start(cfg Config) (*Daemon, error) {
	if cfg.Kernel == nil {
		return nil, errors.New("daemon: no kernel")
	}
	if cfg.MeterEvery <= 0 {
		cfg.MeterEvery = time.Second
	}
	if cfg.Idle == 0 {
		cfg.Idle = DefaultIdle
	}
	if cfg.Reviewer == nil {
		cfg.Reviewer = NoNames{}
	}
	if cfg.Log == nil {
		cfg.Log = hclog.New(&hclog.LoggerOptions{Name: "kuled", Output: os.Stderr})
	}
	home := cfg.Kernel.Home()
	d := &Daemon{cfg: cfg, k: cfg.Kernel, home: home, Bus: NewBus(), log: cfg.Log, done: make(chan struct{}),
		watchStop: make(chan struct{}), watchDone: make(chan struct{})}
	lf, err := os.OpenFile(LockPath(home), os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lf.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("daemon: %w (%s); `kule app` opens it", ErrDaemonRunning, home)
		}
		return nil, fmt.Errorf("daemon: lock %s: %w", LockPath(home), err)
	}
	d.lockF = lf
	ok := false
	defer func() {
		if !ok {
			d.closeAll()
		}
	}()
	fmt.Fprintf(lf, "%d\n", os.Getpid())
	d.sweepLeases()
	q, err := OpenQueue(filepath.Join(home, "questions.json"), d.Bus, cfg.Rules)
	if err != nil {
		return nil, err
	}
	d.Q = q
	var tok [24]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return nil, err
	}
	d.token = hex.EncodeToString(tok[:])
	d.runs = newRuns()

	// The socket: we hold the lock, so a socket file left there is stale.
	sock := SocketPath(home)
	_ = os.Remove(sock)
	sl, err := listenPrivate(sock)
	if err != nil {
		return nil, fmt.Errorf("daemon: listen on %s: %w", sock, err)
	}
	d.sockL = &peerListener{Listener: sl, uid: os.Getuid(), log: d.log}
	addr, err := listenAddr(home, cfg.HTTPAddr)
	if err != nil {
		return nil, err
	}
	hl, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("daemon: listen on %s: %w (the app's port needs a loopback address; on Linux all of 127.0.0.0/8 is one)", addr, err)
	}
	d.httpL = hl
	d.touch()
	ok = true
	return d, nil
}

// Token is this start's session secret for the HTTP port (the cookie's
// value). It never leaves the daemon but in that cookie.
func (d *Daemon) Token() string { return d.token }

// Addr is the loopback address of the HTTP port.
func (d *Daemon) Addr() string { return d.httpL.Addr().String() }

// URL is a new address that opens the app: it carries a launch code that
// logs one browser in, once, within launchTTL.
func (d *Daemon) URL() string { return "http://" + d.Addr() + "/?launch=" + d.launch.mint() }

// Done is closed when the daemon has stopped.
func (d *Daemon) Done() <-chan struct{} { return d.done }

func (d *Daemon) touch() { d.last.Store(time.Now().UnixNano()) }

// busy marks activity that keeps the daemon up until the returned func runs.
func (d *Daemon) busy() func() {
	d.active.Add(1)
	d.touch()
	return func() { d.touch(); d.active.Add(-1) }
}

// Serve serves until ctx ends, Shutdown is called, or the daemon has been
// idle (no request, stream or run) for Config.Idle.
func (d *Daemon) Serve(ctx context.Context) error {
	api := d.apiHandler()
	sockSrv := &http.Server{Handler: d.track(d.socketOnly(api)), ReadHeaderTimeout: 10 * time.Second}
	webSrv := &http.Server{Handler: d.track(d.guard(d.webHandler(api))), ReadHeaderTimeout: 10 * time.Second}
	d.srvs = []*http.Server{sockSrv, webSrv}
	webSrv.RegisterOnShutdown(d.Bus.closeStreams)
	errc := make(chan error, 2)
	go func() { errc <- sockSrv.Serve(d.sockL) }()
	go func() { errc <- webSrv.Serve(d.httpL) }()
	d.watch = newWatcher(d)
	d.watching.Store(true)
	go func() { defer close(d.watchDone); d.watch.run(ctx, d.watchStop) }()
	d.log.Info("daemon started", "home", d.home, "socket", SocketPath(d.home), "http", d.Addr())
	d.findInterrupted(ctx) // resume.go
	var tick <-chan time.Time
	if d.cfg.Idle > 0 {
		every := d.cfg.Idle / 10
		if every > 5*time.Second {
			every = 5 * time.Second
		}
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	var err error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-d.done:
			break loop
		case e := <-errc:
			if !errors.Is(e, http.ErrServerClosed) {
				err = fmt.Errorf("daemon: %w", e)
			}
			break loop
		case <-tick:
			if d.active.Load() == 0 && time.Since(time.Unix(0, d.last.Load())) >= d.cfg.Idle {
				d.log.Info("daemon idle, exiting", "idle", d.cfg.Idle)
				break loop
			}
		}
	}
	d.Shutdown()
	return err
}

// Shutdown stops serving and returns once everything the daemon started
// has ended: the chat transports it drives, every command and agent turn
// (cancelled, then waited for: their steps, history and memory are written
// before it returns) and the memory store, closed. Waiting questions stay
// on disk.
func (d *Daemon) Shutdown() {
	d.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		d.runs.closeAndCancel()
		close(d.watchStop)
		d.attached.closeAll()
		// The shells end before the servers stop (their streams end with
		// them), and are waited for: http.Server runs its OnShutdown funcs
		// without waiting.
		d.terms().closeAll()
		for _, s := range d.srvs {
			_ = s.Shutdown(ctx)
		}
		d.runs.wait()
		if d.watching.Load() {
			<-d.watchDone
		}
		d.closeAll()
		if err := d.k.CloseMemory(); err != nil {
			d.log.Warn("memory store not closed cleanly", "err", err)
		}
		close(d.done)
	})
}

func (d *Daemon) closeAll() {
	d.extOnce.Do(func() {}) // no pool is made after this
	if d.extP != nil {
		d.extP.Close()
	}
	if d.Q != nil {
		d.Q.Close()
	}
	if c, ok := d.cfg.Reviewer.(io.Closer); ok {
		c.Close() // the review's plugin host: its plugin processes end
	}
	if d.sockL != nil {
		d.sockL.Close()
		_ = os.Remove(SocketPath(d.home))
	}
	if d.httpL != nil {
		d.httpL.Close()
	}
	if d.lockF != nil {
		d.lockF.Close()
	}
}

// track counts a request as activity for as long as it runs.
func (d *Daemon) track(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer d.busy()()
		h.ServeHTTP(w, r)
	})
}

// listenPrivate listens on a Unix socket made 0600 from the start: its mode
// is set on the socket before bind (Linux's bind gives the file the
// socket's mode, less the umask), not by the umask, which is the whole
// process's — changed for a moment, it reached every file another goroutine
// made meanwhile.
func listenPrivate(path string) (net.Listener, error) {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) { err = unix.Fchmod(int(fd), 0o600) }); cerr != nil {
			return cerr
		}
		return err
	}}
	return lc.Listen(context.Background(), "unix", path)
}

// sweepLeases revokes the leases a crash of an earlier daemon (or of a
// kule exec) left in the ledger. It runs once the lock is held, before
// any run starts; a revoke that fails is logged and tried again next time.
func (d *Daemon) sweepLeases() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	swept, err := d.k.SweepLeases(ctx)
	for _, l := range swept {
		d.log.Info("lease revoked: its holder was gone", "secret", l.Secret, "task", l.Holder, "lease", l.ID)
	}
	if err != nil {
		d.log.Warn("leases: not all orphaned leases could be revoked; the next start tries again", "error", err.Error())
	}
}
