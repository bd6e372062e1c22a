package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/kulehq/kule/cmd/internal/daemon/client"
)

// event is the part of a daemon event the notifications read.
type event struct {
	Type string          `json:"type"`
	Task string          `json:"task"`
	Data json.RawMessage `json:"data"`
}

// note is one system notification.
type note struct{ Summary, Body string }

// noteFor says which events become a notification: a question that waits
// for the person, and the end of a run (a command or an agent's turn) —
// what someone who looked away wants to hear about. Everything else shows
// in the window only.
func noteFor(ev event) (note, bool) {
	switch ev.Type {
	case "question":
		var q struct {
			Title, Detail, State string
		}
		if json.Unmarshal(ev.Data, &q) != nil || q.State != "waiting" {
			return note{}, false
		}
		return note{Summary: "Kule needs you: " + oneLine(q.Title, 120), Body: oneLine(q.Detail, 300)}, true
	case "run":
		var r struct {
			State, Agent, Command, Error string
			Code                         *int
		}
		if json.Unmarshal(ev.Data, &r) != nil || r.State != "end" {
			return note{}, false
		}
		what := r.Command
		if r.Agent != "" {
			what = r.Agent
		}
		switch {
		case r.Error != "":
			return note{Summary: "Task " + ev.Task + ": " + oneLine(what, 80) + " failed", Body: oneLine(r.Error, 300)}, true
		case r.Code != nil && *r.Code != 0:
			return note{Summary: fmt.Sprintf("Task %s: %s exited with %d", ev.Task, oneLine(what, 80), *r.Code)}, true
		default:
			return note{Summary: "Task " + ev.Task + ": " + oneLine(what, 80) + " finished", Body: "its changes wait for review in the window"}, true
		}
	}
	return note{}, false
}

// oneLine keeps text on one line of at most n runes: a task's output is
// not a notification's business.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}

// readEvents calls fn for each event of a server-sent event stream until
// it ends.
func readEvents(r io.Reader, fn func(event)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var data strings.Builder
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data.Len() > 0 {
				var ev event
				if json.Unmarshal([]byte(data.String()), &ev) == nil {
					fn(ev)
				}
				data.Reset()
			}
		case strings.HasPrefix(line, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	return sc.Err()
}

// notifier sends system notifications.
type notifier interface {
	notify(note) error
}

// desktopNotifier speaks the freedesktop notification protocol on the
// session bus (GNOME, KDE, XFCE, dunst, mako all answer it).
type desktopNotifier struct{ conn *dbus.Conn }

func newDesktopNotifier() (*desktopNotifier, error) {
	conn, err := dbus.ConnectSessionBus()
	if err != nil {
		return nil, err
	}
	return &desktopNotifier{conn: conn}, nil
}

func (d *desktopNotifier) notify(n note) error {
	obj := d.conn.Object("org.freedesktop.Notifications", "/org/freedesktop/Notifications")
	return obj.Call("org.freedesktop.Notifications.Notify", 0,
		"Kule", uint32(0), "kule", n.Summary, n.Body, []string{}, map[string]dbus.Variant{}, int32(-1)).Err
}

// watchEvents follows the daemon's events and turns some into
// notifications, reconnecting while ctx lasts (the daemon may restart: the
// window outlives it).
func watchEvents(ctx context.Context, home string, n notifier, ready func()) {
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", client.SocketPath(home))
	}}}
	for ctx.Err() == nil {
		req, err := http.NewRequestWithContext(ctx, "GET", "http://kuled/api/events", nil)
		if err != nil {
			return
		}
		if resp, err := hc.Do(req); err == nil {
			if resp.StatusCode == http.StatusOK {
				if ready != nil {
					ready()
					ready = nil
				}
				_ = readEvents(resp.Body, func(ev event) {
					if nt, ok := noteFor(ev); ok {
						_ = n.notify(nt) // no notification daemon: the window still shows it
					}
				})
			}
			resp.Body.Close()
		}
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
}
