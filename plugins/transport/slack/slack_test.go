package slack

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kulehq/kule/plugins/transport/slack/slacktest"
	"github.com/kulehq/kule/sdk/transport"
	"github.com/kulehq/kule/sdk/transport/transporttest"
)

const (
	botToken = "xoxb-test-bot"
	appToken = "xapp-test-app"
	channel  = "C0KULE"
)

func start(t *testing.T, mod func(*Config)) (*Slack, *slacktest.Server) {
	t.Helper()
	srv := slacktest.Start(botToken, appToken)
	t.Cleanup(srv.Close)
	cfg := Config{APIURL: srv.URL, BotToken: botToken, AppToken: appToken, Channel: channel, MinInterval: time.Millisecond}
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, "the Socket Mode connection", func() bool { return s.Connections() >= 1 })
	return s, srv
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

func write(srv *slacktest.Server) func(t *testing.T, in transport.Incoming) {
	return func(t *testing.T, in transport.Incoming) {
		t.Helper()
		var id string
		var err error
		switch {
		case in.Choice != "":
			id, err = srv.Press(in.Author, in.Channel, in.Thread, in.Ref, in.InReplyTo, in.Choice)
		case in.Command != "":
			id, err = srv.Slash(in.Author, in.Channel, strings.TrimSpace(in.Command+" "+in.Text))
		default:
			typ := "channel"
			if in.Direct {
				typ = "im"
			}
			id, err = srv.Message(in.Author, in.Channel, typ, in.Text, in.Ref, in.Thread)
		}
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the ack of "+id, func() bool { return srv.Acked(id) })
	}
}

// TestConformance runs the transport kit against the stand-in.
func TestConformance(t *testing.T) {
	t.Parallel()
	s, srv := start(t, nil)
	transporttest.Run(t, transporttest.Harness{Transport: s, Channel: channel, Write: write(srv)})
	posts := srv.Posts()
	var file, edit, buttons bool
	for _, p := range posts {
		file = file || (p.File == "out.txt" && p.Content == "long output\n")
		edit = edit || (p.Method == "chat.update" && len(p.Buttons) == 0 && p.Text == "Approved")
		buttons = buttons || (len(p.Buttons) == 2 && p.Buttons[0] == slacktest.Button{BlockID: "q1", Value: "Approve"})
	}
	if !file || !edit || !buttons {
		t.Fatalf("file %v, edit without buttons %v, buttons named by the event %v; posts: %+v", file, edit, buttons, posts)
	}
}

// TestWhatIsNotRead: the bot's own messages, other channels and edits never
// reach the host; a direct message does, marked direct.
func TestWhatIsNotRead(t *testing.T) {
	t.Parallel()
	s, srv := start(t, nil)
	w := write(srv)
	if id, err := srv.BotMessage(channel, "Task 1 started", "1.1"); err != nil {
		t.Fatal(err)
	} else {
		waitFor(t, "the ack", func() bool { return srv.Acked(id) })
	}
	w(t, transport.Incoming{Author: "U1", Channel: "COTHER", Ref: "1.2", Text: "not here"})
	w(t, transport.Incoming{Author: "U1", Channel: "D1", Ref: "1.3", Text: "~/notes: hi", Direct: true})
	b, err := s.Receive(context.Background(), "", 5000)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Incoming) != 1 || !b.Incoming[0].Direct || b.Incoming[0].Channel != "D1" {
		t.Fatalf("received %+v; want only the direct message", b.Incoming)
	}
}

// TestReconnect: when Slack drops the Socket Mode connection the transport
// opens a new one and what people write after still arrives.
func TestReconnect(t *testing.T) {
	t.Parallel()
	s, srv := start(t, nil)
	srv.Drop()
	waitFor(t, "a second connection", func() bool { return srv.Conns() >= 2 && s.Connections() >= 2 })
	write(srv)(t, transport.Incoming{Author: "U1", Channel: channel, Ref: "2.1", Text: "after the drop"})
	b, err := s.Receive(context.Background(), "", 5000)
	if err != nil || len(b.Incoming) != 1 || b.Incoming[0].Text != "after the drop" {
		t.Fatalf("after a reconnect: %+v, %v", b, err)
	}
}

// TestFloodRespectsRateLimits: posts beyond Slack's rate limit wait out its
// Retry-After and all land; with the wait taken away, the transport posts
// into the limit again and again.
func TestFloodRespectsRateLimits(t *testing.T) {
	t.Parallel()
	for _, honour := range []bool{true, false} {
		t.Run(fmt.Sprintf("honour=%v", honour), func(t *testing.T) {
			s, srv := start(t, func(c *Config) { c.honourRetryAfter = &honour })
			srv.RateLimit = 5
			const n = 12
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if !honour {
				ctx, cancel = context.WithTimeout(ctx, 1500*time.Millisecond)
				defer cancel()
			}
			for i := range n {
				if _, err := s.Deliver(ctx, transport.Event{ID: fmt.Sprint(i), Notice: &transport.Notice{Text: fmt.Sprintf("line %d", i)}}, ""); err != nil {
					if honour {
						t.Fatalf("post %d: %v", i, err)
					}
					break
				}
			}
			if honour {
				if got := len(srv.Posts()); got != n || srv.Violations() != 0 {
					t.Fatalf("%d of %d posts landed, %d inside a Retry-After", got, n, srv.Violations())
				}
				return
			}
			if srv.Violations() == 0 {
				t.Fatal("without the wait no post came inside a Retry-After: the test shows nothing")
			}
		})
	}
}

// TestTokensOnlyInHeaders: every call carries its token in the
// Authorization header, where the proxy puts kept secrets; slack-go alone
// puts the bot token into form bodies, which the stand-in (like the proxy)
// refuses.
func TestTokensOnlyInHeaders(t *testing.T) {
	t.Parallel()
	for _, guard := range []bool{true, false} {
		t.Run(fmt.Sprintf("guard=%v", guard), func(t *testing.T) {
			s, srv := start(t, func(c *Config) { c.plainHTTP = !guard })
			_, err := s.Deliver(context.Background(), transport.Event{ID: "1", Notice: &transport.Notice{Text: "hi"}}, "")
			if guard && err != nil {
				t.Fatalf("with the token in the header: %v", err)
			}
			if !guard && (err == nil || !strings.Contains(err.Error(), "token_in_body")) {
				t.Fatalf("without moving the token the post went through (%v): the test shows nothing", err)
			}
			for _, a := range srv.Auth() {
				if a != "Bearer "+botToken && a != "Bearer "+appToken && a != "" {
					t.Errorf("a call authorised with %q", a)
				}
			}
		})
	}
}
