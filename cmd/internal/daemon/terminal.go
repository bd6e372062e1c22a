package daemon

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/kulehq/kule/kernel"
)

// The Terminal panel's shells. Each is an interactive shell on a pty in the daemon, started in
// the task's copy, outside the sandbox, as the task menu's Open terminal is: a person's own
// shell, for looking around the copy and running what they choose (what it changes in the
// copy shows under Review like any other change, and reaches the folder only by a commit).
// Only the page that holds this daemon's token reaches these endpoints (the web guard), and a
// shell is reached only by its random id.
//
//  1. POST /api/tasks/{id}/terminals starts one (cols, rows) and answers its id.
//  2. GET /api/terminals/{tid}/stream streams its output as Server-Sent Events: "out" events
//     carry base64 bytes (a pty's output may split a character), "exit" its end. A new stream
//     first gets what the shell wrote lately (its last 64 KiB), so a reloaded page sees it.
//  3. POST …/input writes what the person typed; POST …/resize sets the pty's size.
//  4. DELETE …/{tid} ends it (SIGHUP, then SIGKILL to its process group); so does the
//     daemon's shutdown.

// Bounds of the terminals.
const (
	maxTerminals  = 16
	termScrollKey = 64 << 10
	maxTermInput  = 64 << 10
)

var (
	errNoTerminal    = errors.New("no such terminal (it ended, or the daemon was started again)")
	errManyTerminals = errors.New("too many terminals open")
)

// terminal is one shell on a pty.
type terminal struct {
	ID     string    `json:"id"`
	Task   string    `json:"task"`
	Title  string    `json:"title"`
	Shell  string    `json:"shell"`
	Start  time.Time `json:"started"`
	Exited bool      `json:"exited"`
	Code   int       `json:"code"`

	mu   sync.Mutex
	f    *os.File
	cmd  *exec.Cmd
	tail []byte
	subs map[chan []byte]struct{}
	done chan struct{}
	// byHand ends the mark that a person's shell has the copy open
	// (kernel.OpenByHand): until then no status trusts a record of folds.
	byHand func()
}

// terminals are the daemon's shells by id.
type terminals struct {
	mu sync.Mutex
	m  map[string]*terminal
	n  int
}

func (d *Daemon) terms() *terminals {
	d.termOnce.Do(func() { d.termSet = &terminals{m: map[string]*terminal{}} })
	return d.termSet
}

// loginShell is the person's shell: $SHELL when it is an absolute path that exists, else
// bash, else sh.
func loginShell() string {
	if s := os.Getenv("SHELL"); len(s) > 0 && s[0] == '/' {
		if fi, err := os.Stat(s); err == nil && !fi.IsDir() {
			return s
		}
	}
	for _, s := range []string{"/bin/bash", "/bin/sh"} {
		if _, err := os.Stat(s); err == nil {
			return s
		}
	}
	return "/bin/sh"
}

// StartTerminal starts a shell on a pty of cols×rows in t's copy.
func (d *Daemon) StartTerminal(t *kernel.Task, cols, rows int) (*terminal, error) {
	ts := d.terms()
	ts.mu.Lock()
	if len(ts.m) >= maxTerminals {
		ts.mu.Unlock()
		return nil, fmt.Errorf("terminal: %w (%d); close one first", errManyTerminals, maxTerminals)
	}
	ts.n++
	n := ts.n
	ts.mu.Unlock()
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	// The person's own shell writes the copy with no fold to note it.
	byHand, err := kernel.OpenByHand(t)
	if err != nil {
		return nil, fmt.Errorf("terminal: %w", err)
	}
	sh := loginShell()
	cmd := exec.Command(sh, "-i")
	cmd.Dir = t.Paths.Copy
	cmd.Env = append(os.Environ(), "TERM=xterm-256color", "COLORTERM=truecolor", "KULE_TASK="+t.ID, "KULE_COPY="+t.Paths.Copy)
	size := &pty.Winsize{Cols: uint16(min(max(cols, 10), 500)), Rows: uint16(min(max(rows, 3), 300))}
	f, err := pty.StartWithSize(cmd, size) // a new session: the shell leads its own process group
	if err != nil {
		byHand()
		return nil, fmt.Errorf("terminal: start %s in the copy: %w (nothing else was started)", sh, err)
	}
	tm := &terminal{byHand: byHand, ID: hex.EncodeToString(b[:]), Task: t.ID, Title: fmt.Sprintf("Terminal %d", n), Shell: sh, Start: time.Now().UTC(),
		f: f, cmd: cmd, subs: map[chan []byte]struct{}{}, done: make(chan struct{})}
	ts.mu.Lock()
	ts.m[tm.ID] = tm
	ts.mu.Unlock()
	go tm.pump()
	return tm, nil
}

// pump copies the pty's output to the streams and the tail until the shell ends.
func (tm *terminal) pump() {
	buf := make([]byte, 16<<10)
	for {
		n, err := tm.f.Read(buf)
		if n > 0 {
			chunk := append([]byte(nil), buf[:n]...)
			tm.mu.Lock()
			tm.tail = append(tm.tail, chunk...)
			if len(tm.tail) > termScrollKey {
				tm.tail = tm.tail[len(tm.tail)-termScrollKey:]
			}
			for c := range tm.subs {
				select {
				case c <- chunk:
				default: // a stream that does not keep up loses this chunk, never blocks the shell
				}
			}
			tm.mu.Unlock()
		}
		if err != nil {
			break
		}
	}
	err := tm.cmd.Wait()
	tm.mu.Lock()
	tm.Exited = true
	if ee, ok := err.(*exec.ExitError); ok {
		tm.Code = ee.ExitCode()
	}
	tm.mu.Unlock()
	tm.f.Close()
	tm.byHand()
	close(tm.done)
}

// resize sets the pty's window size. It goes through the file's raw
// connection rather than pty.Setsize, whose File.Fd puts the pty back into
// blocking mode and races the pump's Close.
func (tm *terminal) resize(cols, rows int) error {
	rc, err := tm.f.SyscallConn()
	if err != nil {
		return err
	}
	var ierr error
	if err := rc.Control(func(fd uintptr) {
		ierr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Col: uint16(cols), Row: uint16(rows)})
	}); err != nil {
		return err
	}
	return ierr
}

// stop ends the shell: SIGHUP to its process group (as a closed terminal window does), then
// SIGKILL to what is left after a moment.
func (tm *terminal) stop() {
	if tm.cmd.Process == nil {
		return
	}
	pgid := tm.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGHUP)
	select {
	case <-tm.done:
	case <-time.After(2 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-tm.done
	}
}

// closeAll ends every shell (the daemon stops).
func (ts *terminals) closeAll() {
	ts.mu.Lock()
	all := make([]*terminal, 0, len(ts.m))
	for id, tm := range ts.m {
		all = append(all, tm)
		delete(ts.m, id)
	}
	ts.mu.Unlock()
	var wg sync.WaitGroup
	for _, tm := range all {
		wg.Add(1)
		go func() { defer wg.Done(); tm.stop() }()
	}
	wg.Wait()
}

func (ts *terminals) get(id string) (*terminal, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if tm, ok := ts.m[id]; ok {
		return tm, nil
	}
	return nil, fmt.Errorf("terminal %q: %w", id, errNoTerminal)
}

// terminalView is a terminal as the panel lists it.
type terminalView struct {
	ID     string    `json:"id"`
	Task   string    `json:"task"`
	Title  string    `json:"title"`
	Shell  string    `json:"shell"`
	Start  time.Time `json:"started"`
	Exited bool      `json:"exited"`
	Code   int       `json:"code"`
}

func (tm *terminal) view() terminalView {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return terminalView{ID: tm.ID, Task: tm.Task, Title: tm.Title, Shell: tm.Shell, Start: tm.Start, Exited: tm.Exited, Code: tm.Code}
}

// terminalRoutes adds the terminals' endpoints to the API.
func (d *Daemon) terminalRoutes(m *http.ServeMux) {
	m.HandleFunc("POST /api/tasks/{id}/terminals", d.withTask(d.newTerminal))
	m.HandleFunc("GET /api/tasks/{id}/terminals", d.withTask(d.listTerminals))
	m.HandleFunc("GET /api/terminals/{tid}/stream", d.withTerminal(d.terminalStream))
	m.HandleFunc("POST /api/terminals/{tid}/input", d.withTerminal(d.terminalInput))
	m.HandleFunc("POST /api/terminals/{tid}/resize", d.withTerminal(d.terminalResize))
	m.HandleFunc("DELETE /api/terminals/{tid}", d.withTerminal(d.closeTerminal))
}

func (d *Daemon) newTerminal(w http.ResponseWriter, r *http.Request, t *kernel.Task) {
	var in struct {
		Cols int `json:"cols"`
		Rows int `json:"rows"`
	}
	if err := readBody(r, &in); err != nil {
		fail(w, err)
		return
	}
	tm, err := d.StartTerminal(t, in.Cols, in.Rows)
	if err != nil {
		if errors.Is(err, errManyTerminals) {
			writeJSON(w, http.StatusConflict, apiError{Error: err.Error()})
			return
		}
		fail(w, err)
		return
	}
	writeJSON(w, 201, tm.view())
}

func (d *Daemon) listTerminals(w http.ResponseWriter, r *http.Request, t *kernel.Task) {
	ts := d.terms()
	ts.mu.Lock()
	out := []terminalView{}
	for _, tm := range ts.m {
		if tm.Task == t.ID {
			out = append(out, tm.view())
		}
	}
	ts.mu.Unlock()
	// Oldest first, as their tabs were opened.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Start.Before(out[j-1].Start); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	writeJSON(w, 200, out)
}

// withTerminal finds the terminal a request names, or answers 404.
func (d *Daemon) withTerminal(fn func(http.ResponseWriter, *http.Request, *terminal)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tm, err := d.terms().get(r.PathValue("tid"))
		if err != nil {
			writeJSON(w, http.StatusNotFound, apiError{Error: err.Error() + "; open a new one"})
			return
		}
		fn(w, r, tm)
	}
}

func (d *Daemon) terminalInput(w http.ResponseWriter, r *http.Request, tm *terminal) {
	var in struct {
		Data string `json:"data"`
	}
	if err := readBody(r, &in); err != nil {
		fail(w, err)
		return
	}
	if len(in.Data) > maxTermInput {
		fail(w, fmt.Errorf("%w: input over 64 KiB at once (nothing was typed)", errBadRequest))
		return
	}
	if _, err := tm.f.Write([]byte(in.Data)); err != nil {
		writeJSON(w, http.StatusGone, apiError{Error: "the terminal ended: " + err.Error()})
		return
	}
	writeJSON(w, 200, map[string]any{"ok": true})
}

func (d *Daemon) terminalResize(w http.ResponseWriter, r *http.Request, tm *terminal) {
	var in struct {
		Cols int `json:"cols"`
		Rows int `json:"rows"`
	}
	if err := readBody(r, &in); err != nil {
		fail(w, err)
		return
	}
	if in.Cols < 2 || in.Rows < 1 || in.Cols > 1000 || in.Rows > 1000 {
		fail(w, fmt.Errorf("%w: a size of %d×%d (columns 2–1000, rows 1–1000)", errBadRequest, in.Cols, in.Rows))
		return
	}
	if err := tm.resize(in.Cols, in.Rows); err != nil {
		writeJSON(w, http.StatusGone, apiError{Error: "the terminal ended: " + err.Error()})
		return
	}
	writeJSON(w, 200, map[string]any{"ok": true})
}

func (d *Daemon) closeTerminal(w http.ResponseWriter, r *http.Request, tm *terminal) {
	ts := d.terms()
	ts.mu.Lock()
	delete(ts.m, tm.ID)
	ts.mu.Unlock()
	tm.stop()
	writeJSON(w, 200, tm.view())
}

func (d *Daemon) terminalStream(w http.ResponseWriter, r *http.Request, tm *terminal) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "terminal: streaming unsupported", http.StatusInternalServerError)
		return
	}
	c := make(chan []byte, 256)
	tm.mu.Lock()
	tail := append([]byte(nil), tm.tail...)
	tm.subs[c] = struct{}{}
	tm.mu.Unlock()
	defer func() { tm.mu.Lock(); delete(tm.subs, c); tm.mu.Unlock() }()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	fmt.Fprintf(w, "retry: 2000\n\n")
	if len(tail) > 0 {
		fmt.Fprintf(w, "event: out\ndata: %s\n\n", base64.StdEncoding.EncodeToString(tail))
	}
	fl.Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case b := <-c:
			fmt.Fprintf(w, "event: out\ndata: %s\n\n", base64.StdEncoding.EncodeToString(b))
			fl.Flush()
		case <-tm.done:
			// What is still queued, then the end.
			for {
				select {
				case b := <-c:
					fmt.Fprintf(w, "event: out\ndata: %s\n\n", base64.StdEncoding.EncodeToString(b))
					continue
				default:
				}
				break
			}
			fmt.Fprintf(w, "event: exit\ndata: %d\n\n", tm.view().Code)
			fl.Flush()
			return
		}
	}
}
