// Package client talks to a running kule daemon over $KULE_HOME/kuled.sock.
// The CLI uses it to find the daemon (`kule app`) and to start one; every
// other command works on the kernel directly whether a daemon runs or not —
// the kernel's task and folder locks make both safe, and the daemon notices
// what a terminal did and tells the app.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// ErrNotRunning is returned when no daemon answers on the home's socket.
var ErrNotRunning = errors.New("no kule daemon runs for this home")

// Client is a connection to one home's daemon.
type Client struct {
	home string
	http *http.Client
}

// SocketPath is where the daemon of home listens.
func SocketPath(home string) string { return filepath.Join(home, "kuled.sock") }

// New returns a client for home's daemon (it does not connect yet).
func New(home string) *Client {
	sock := SocketPath(home)
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}
	return &Client{home: home, http: &http.Client{Transport: tr}}
}

// Do sends a request with a JSON body (nil for none) and decodes the answer
// into out (nil to discard). An API refusal comes back as its error text.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://kuled"+path, r)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var ne *net.OpError
		if errors.As(err, &ne) || errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("%w (%s): %v", ErrNotRunning, c.home, err)
		}
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return fmt.Errorf("daemon: %s", e.Error)
		}
		return fmt.Errorf("daemon: %s: %s", resp.Status, bytes.TrimSpace(b))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// Running reports whether a daemon answers.
func (c *Client) Running(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return c.Do(ctx, "GET", "/api/health", nil, nil) == nil
}

// Question is what a process of the same user asks a person through the
// daemon (it waits under Needs you): a connection or a permission.
type Question struct {
	Task    string `json:"task"`
	Kind    string `json:"kind"` // "connection", "permission"
	Title   string `json:"title"`
	Detail  string `json:"detail,omitempty"`
	Subject string `json:"subject,omitempty"` // what "remember" keeps: host:port, agent and tool kind
}

// Ask puts q to the person through the daemon and waits for the answer (or
// for the task's wait to run out). It returns whether it was approved; an
// error (no daemon, ctx ended) means no answer: treat it as refused.
func (c *Client) Ask(ctx context.Context, q Question) (bool, error) {
	var out struct {
		State string `json:"state"`
	}
	if err := c.Do(ctx, "POST", "/api/questions?wait=1", q, &out); err != nil {
		return false, err
	}
	return out.State == "approved", nil
}

// AppURL asks the daemon for the address that opens the app (with its token).
func (c *Client) AppURL(ctx context.Context) (string, error) {
	var out struct {
		URL string `json:"url"`
	}
	if err := c.Do(ctx, "GET", "/api/app", nil, &out); err != nil {
		return "", err
	}
	return out.URL, nil
}

// StartDaemon starts `exe daemon` detached (its own session, output to
// $KULE_HOME/kuled.log) unless one runs, and waits until it answers.
func StartDaemon(ctx context.Context, home, exe string) error {
	c := New(home)
	if c.Running(ctx) {
		return nil
	}
	logf, err := os.OpenFile(filepath.Join(home, "kuled.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("start daemon: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(exe, "daemon")
	cmd.Env = append(os.Environ(), "KULE_HOME="+home)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start daemon: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.NewTimer(15 * time.Second)
	defer deadline.Stop()
	for {
		if c.Running(ctx) {
			return nil
		}
		select {
		case err := <-exited:
			if c.Running(ctx) { // another start won the race; it serves
				return nil
			}
			return fmt.Errorf("start daemon: it exited (%v); see %s", err, filepath.Join(home, "kuled.log"))
		case <-deadline.C:
			return fmt.Errorf("start daemon: no answer after 15s; see %s", filepath.Join(home, "kuled.log"))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
