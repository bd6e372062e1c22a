package discord

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kulehq/kule/plugins/transport/discord/discordtest"
	"github.com/kulehq/kule/sdk/transport"
	"github.com/kulehq/kule/sdk/transport/transporttest"
)

const (
	token   = "discord-test-token"
	channel = "100000000000000001"
	guild   = "200000000000000001"
)

// discordgo's endpoints are process-wide: every test of this package talks
// to one stand-in, one test at a time.
var srv *discordtest.Server

func TestMain(m *testing.M) {
	srv = discordtest.Start(token)
	code := m.Run()
	srv.Close()
	os.Exit(code)
}

func start(t *testing.T, mod func(*Discord)) *Discord {
	t.Helper()
	srv.RateLimit = 0
	d, err := New(Config{API: srv.API, Token: token, Channel: channel})
	if err != nil {
		t.Fatal(err)
	}
	if mod != nil {
		mod(d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, "the gateway session", func() bool { return d.Connections() >= 1 })
	return d
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !ok(); {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30 s for %s", what)
		}
		time.Sleep(10 * time.Millisecond) // polling; the deadline only ends a broken run
	}
}

func write(t *testing.T, in transport.Incoming) {
	t.Helper()
	ch := in.Channel
	if in.Thread != "" {
		ch = in.Thread
	}
	g := guild
	if in.Direct {
		g = ""
	}
	var err error
	switch {
	case in.Choice != "":
		err = srv.Press(in.Author, ch, g, in.Ref, "k|"+in.InReplyTo+"|"+in.Choice)
	case in.Command != "":
		err = srv.Command(in.Author, ch, g, strings.TrimSpace(in.Command+" "+in.Text))
	default:
		err = srv.Message(in.Author, ch, g, in.Text, in.Ref, "")
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestConformance runs the transport kit against the stand-in.
func TestConformance(t *testing.T) {
	d := start(t, nil)
	acks := srv.Acks()
	transporttest.Run(t, transporttest.Harness{Transport: d, Channel: channel, Write: write})
	waitFor(t, "the acknowledgements of the kit's 4 interactions", func() bool { return srv.Acks() >= acks+4 })
	var file, edit, buttons bool
	for _, p := range srv.Posts() {
		file = file || (p.File == "out.txt" && p.FileData == "long output\n")
		edit = edit || (p.Method == "edit" && p.Content == "Approved" && len(p.Buttons) == 0)
		buttons = buttons || strings.Join(p.Buttons, ",") == "k|q1|Approve,k|q1|Deny"
	}
	if !file || !edit || !buttons {
		t.Fatalf("file %v, edit without buttons %v, buttons %v; posts %+v", file, edit, buttons, srv.Posts())
	}
}

// TestDirectMessages: a DM launches; a reply to one of the task's messages
// continues it (DMs have no threads).
func TestDirectMessages(t *testing.T) {
	d := start(t, nil)
	ctx := context.Background()
	must(t, srv.Message("U1", "DM1", "", "~/notes: hi", "300000000000000001", ""))
	b := receive(t, d, "", 1)
	if in := b.Incoming[0]; !in.Direct || in.Thread != "" || in.Ref != "300000000000000001" {
		t.Fatalf("a DM arrived as %+v", in)
	}
	got, err := d.Deliver(ctx, transport.Event{ID: "n", Channel: "DM1", Thread: "300000000000000001", Notice: &transport.Notice{Text: "started"}}, "")
	must(t, err)
	if got.Thread != "300000000000000001" {
		t.Fatalf("delivered in a DM: %+v", got)
	}
	must(t, srv.Message("U1", "DM1", "", "go on", "300000000000000002", got.Ref))
	b = receive(t, d, b.Cursor, 1)
	if in := b.Incoming[0]; in.Thread != "300000000000000001" {
		t.Fatalf("a reply in a DM arrived as %+v: want the task's thread", in)
	}
	// Bots, other channels: not read.
	must(t, srv.BotMessage(channel, guild, "posted by a bot", "300000000000000003"))
	must(t, srv.Message("U1", "999", guild, "elsewhere", "300000000000000004", ""))
	must(t, srv.Message("U1", channel, guild, "marker", "300000000000000005", ""))
	b = receive(t, d, b.Cursor, 1)
	if len(b.Incoming) != 1 || b.Incoming[0].Text != "marker" {
		t.Fatalf("read %+v; want only the marker", b.Incoming)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func receive(t *testing.T, d *Discord, cursor string, n int) transport.Batch {
	t.Helper()
	var all transport.Batch
	for len(all.Incoming) < n {
		b, err := d.Receive(context.Background(), cursor, 30000)
		must(t, err)
		if len(b.Incoming) == 0 {
			t.Fatalf("waited 30 s for %d items", n)
		}
		cursor = b.Cursor
		all.Incoming = append(all.Incoming, b.Incoming...)
	}
	all.Cursor = cursor
	return all
}

// TestReconnect: when Discord drops the gateway, the session resumes and
// what people write after still arrives; the token travelled in the
// identify and the resume only.
func TestReconnect(t *testing.T) {
	d := start(t, nil)
	before := srv.Conns()
	srv.Drop()
	waitFor(t, "a resumed session", func() bool { return srv.Conns() > before && d.Connections() >= 2 })
	must(t, srv.Message("U1", channel, guild, "after the drop", "400000000000000001", ""))
	b := receive(t, d, "", 1)
	if b.Incoming[0].Text != "after the drop" {
		t.Fatalf("after a reconnect: %+v", b.Incoming)
	}
	for _, tok := range srv.Identified() {
		if tok != "Bot "+token {
			t.Fatalf("the gateway was sent %q", tok)
		}
	}
}

// TestFloodRespectsRateLimits: posts beyond the rate limit wait out
// retry_after and all land; with the wait taken away they are lost.
func TestFloodRespectsRateLimits(t *testing.T) {
	for _, honour := range []bool{true, false} {
		t.Run(fmt.Sprintf("honour=%v", honour), func(t *testing.T) {
			d := start(t, func(d *Discord) { d.s.ShouldRetryOnRateLimit = honour })
			srv.RateLimit = 5
			defer func() { srv.RateLimit = 0 }()
			v0, p0 := srv.Violations(), len(srv.Posts())
			const n = 12
			var failed int
			for i := range n {
				_, err := d.Deliver(context.Background(), transport.Event{ID: fmt.Sprint(i), Notice: &transport.Notice{Text: fmt.Sprintf("line %d", i)}}, "")
				var rl *discordgo.RateLimitError
				if errors.As(err, &rl) {
					failed++
				} else if err != nil {
					t.Fatal(err)
				}
			}
			landed := len(srv.Posts()) - p0
			if honour && (landed != n || srv.Violations() != v0) {
				t.Fatalf("%d of %d landed, %d inside a retry_after", landed, n, srv.Violations()-v0)
			}
			if !honour && failed == 0 {
				t.Fatal("without the wait nothing was lost: the test shows nothing")
			}
		})
	}
}
