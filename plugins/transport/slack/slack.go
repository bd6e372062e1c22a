// Package slack is Kule's Slack cockpit: a transport plugin that reads the
// channel, direct messages, the /kule slash command and button presses over
// Socket Mode (no public URL needed) and posts Kule's events with the Web
// API, through github.com/slack-go/slack.
//
// Tokens: the plugin is handed placeholders, never the tokens. Socket Mode
// needs the app-level token only on one HTTPS call (apps.connections.open,
// in its Authorization header), and every Web API call carries the bot token
// the same way; the WebSocket URL that call answers holds a one-time ticket,
// not a token. So the proxy, which alone holds the kept secrets, puts each
// token into the Authorization header of requests to Slack's hosts and
// nowhere else, and the plugin's memory, environment and files never hold
// one.
package slack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hashicorp/go-hclog"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/kulehq/kule/sdk/transport"
)

// Config is what the plugin needs; its main reads it from the environment
// the host gives it (see FromEnv).
type Config struct {
	APIURL   string // Slack's Web API, ending in "/"; "" = slack.APIURL
	BotToken string // xoxb-… (or its placeholder)
	AppToken string // xapp-… (or its placeholder)
	Channel  string // the channel id tasks are launched in
	// MinInterval is the least time between two posts (Slack allows about
	// one message a second per channel); 0 = one second.
	MinInterval time.Duration
	Log         hclog.Logger
	// Dialer opens the Socket Mode WebSocket (nil: slack-go's, which
	// takes the proxy from the environment and the system's roots).
	Dialer *websocket.Dialer

	// honourRetryAfter, when set to false, makes retry post again at once
	// after a 429 (tests show what the wait guards).
	honourRetryAfter *bool
	// plainHTTP leaves slack-go's own HTTP client (tests show what
	// headerToken guards).
	plainHTTP bool
}

// Sentinel errors.
var (
	ErrConfig = errors.New("slack: incomplete configuration")
)

// Slack is the transport.
type Slack struct {
	cfg   Config
	api   *slack.Client
	sm    *socketmode.Client
	inbox *transport.Inbox
	log   hclog.Logger

	mu       sync.Mutex
	botUser  string
	channels map[string]string // message ts → channel, for edits
	last     time.Time         // the last post, for pacing
	conns    int
}

var _ transport.Transport = (*Slack)(nil)

// New makes the transport; Run connects it.
func New(cfg Config) (*Slack, error) {
	if cfg.BotToken == "" || cfg.AppToken == "" || cfg.Channel == "" {
		return nil, fmt.Errorf("%w: a bot token, an app token and a channel are needed (kule transport add slack)", ErrConfig)
	}
	if cfg.MinInterval <= 0 {
		cfg.MinInterval = time.Second
	}
	if cfg.Log == nil {
		cfg.Log = hclog.NewNullLogger()
	}
	hc := &http.Client{Transport: headerToken{next: http.DefaultTransport}}
	opts := []slack.Option{slack.OptionAppLevelToken(cfg.AppToken)}
	if !cfg.plainHTTP {
		opts = append(opts, slack.OptionHTTPClient(hc))
	}
	if cfg.APIURL != "" {
		opts = append(opts, slack.OptionAPIURL(cfg.APIURL))
	}
	api := slack.New(cfg.BotToken, opts...)
	s := &Slack{cfg: cfg, api: api, inbox: transport.NewInbox(0), log: cfg.Log, channels: map[string]string{}}
	var smOpts []socketmode.Option
	if cfg.Dialer != nil {
		smOpts = append(smOpts, socketmode.OptionDialer(cfg.Dialer))
	}
	s.sm = socketmode.New(api, smOpts...)
	return s, nil
}

// Connections counts the Socket Mode connections made (reconnects included).
func (s *Slack) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

// Run keeps the Socket Mode connection up until ctx ends: when Slack drops
// it (as it does every few hours, or on a "disconnect" request) it opens a
// new one, waiting longer after each failure (at most 30 s).
func (s *Slack) Run(ctx context.Context) error {
	if r, err := s.api.AuthTestContext(ctx); err == nil {
		s.mu.Lock()
		s.botUser = r.UserID
		s.mu.Unlock()
	} else {
		s.log.Warn("auth.test failed", "err", err)
	}
	go s.events(ctx)
	fails := 0
	for ctx.Err() == nil {
		err := s.sm.RunContext(ctx)
		if ctx.Err() != nil {
			return nil
		}
		fails++
		s.log.Warn("socket mode connection ended", "err", err, "attempt", fails)
		select {
		case <-ctx.Done():
		case <-time.After(min(time.Duration(fails)*500*time.Millisecond, 30*time.Second)):
		}
	}
	return nil
}

func (s *Slack) events(ctx context.Context) {
	for {
		var evt socketmode.Event
		select {
		case <-ctx.Done():
			return
		case evt = <-s.sm.Events:
		}
		switch evt.Type {
		case socketmode.EventTypeConnected:
			s.mu.Lock()
			s.conns++
			s.mu.Unlock()
		case socketmode.EventTypeEventsAPI:
			s.ack(evt)
			if e, ok := evt.Data.(slackevents.EventsAPIEvent); ok {
				if m, ok := e.InnerEvent.Data.(*slackevents.MessageEvent); ok {
					s.message(m)
				}
			}
		case socketmode.EventTypeSlashCommand:
			s.ack(evt)
			if c, ok := evt.Data.(slack.SlashCommand); ok {
				verb, rest, _ := strings.Cut(strings.TrimSpace(c.Text), " ")
				s.inbox.Push(transport.Incoming{Author: c.UserID, Channel: c.ChannelID, Command: strings.ToLower(verb), Text: strings.TrimSpace(rest)})
			}
		case socketmode.EventTypeInteractive:
			s.ack(evt)
			if cb, ok := evt.Data.(slack.InteractionCallback); ok && cb.Type == slack.InteractionTypeBlockActions {
				for _, a := range cb.ActionCallback.BlockActions {
					s.inbox.Push(transport.Incoming{Author: cb.User.ID, Channel: cb.Channel.ID, Thread: cb.Container.ThreadTs, Ref: cb.Container.MessageTs, InReplyTo: a.BlockID, Choice: a.Value})
				}
			}
		}
	}
}

func (s *Slack) ack(evt socketmode.Event) {
	if evt.Request == nil {
		return
	}
	if err := s.sm.Ack(*evt.Request); err != nil {
		s.log.Warn("ack failed", "err", err)
	}
}

// message turns a message event into an Incoming: people's new messages in
// the channel and in direct messages only (no edits, no bots, not our own).
func (s *Slack) message(m *slackevents.MessageEvent) {
	s.mu.Lock()
	bot := s.botUser
	s.mu.Unlock()
	if m.SubType != "" || m.BotID != "" || m.User == "" || m.User == bot {
		return
	}
	direct := m.ChannelType == "im"
	if !direct && m.Channel != s.cfg.Channel {
		return
	}
	in := transport.Incoming{Author: m.User, Text: m.Text, Channel: m.Channel, Ref: m.TimeStamp, Direct: direct}
	if m.ThreadTimeStamp != "" && m.ThreadTimeStamp != m.TimeStamp {
		in.Thread = m.ThreadTimeStamp
	}
	s.inbox.Push(in)
}

// Info implements transport.Transport.
func (s *Slack) Info(context.Context) (transport.Info, error) {
	return transport.Info{Name: "slack", Capabilities: []transport.Capability{transport.CapButtons, transport.CapEdit, transport.CapFiles}}, nil
}

// Receive implements transport.Transport.
func (s *Slack) Receive(ctx context.Context, cursor string, waitMillis int64) (transport.Batch, error) {
	return s.inbox.Receive(ctx, cursor, waitMillis)
}

// pace waits until a post may go (MinInterval after the last).
func (s *Slack) pace(ctx context.Context) error {
	s.mu.Lock()
	wait := time.Until(s.last.Add(s.cfg.MinInterval))
	s.mu.Unlock()
	if wait > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
	s.mu.Lock()
	s.last = time.Now()
	s.mu.Unlock()
	return nil
}

// retry runs call, waiting out Slack's rate limits (the Retry-After it
// answers with 429) until ctx ends.
func (s *Slack) retry(ctx context.Context, call func() error) error {
	for {
		if err := s.pace(ctx); err != nil {
			return err
		}
		err := call()
		var rl *slack.RateLimitedError
		if !errors.As(err, &rl) {
			return err
		}
		s.log.Info("rate limited", "retry_after", rl.RetryAfter)
		if h := s.cfg.honourRetryAfter; h != nil && !*h {
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(rl.RetryAfter):
		}
	}
}

// Deliver implements transport.Transport.
func (s *Slack) Deliver(ctx context.Context, ev transport.Event, replaces string) (transport.Delivered, error) {
	if err := ev.Check(); err != nil {
		return transport.Delivered{}, err
	}
	channel := ev.Channel
	if channel == "" {
		channel = s.cfg.Channel
	}
	if ev.File != nil {
		var id string
		err := s.retry(ctx, func() error {
			f, err := s.api.UploadFileContext(ctx, slack.UploadFileParameters{
				Filename: ev.File.Name, Title: ev.File.Name, FileSize: len(ev.File.Content), Content: string(ev.File.Content),
				Channel: channel, ThreadTimestamp: ev.Thread, InitialComment: ev.File.Comment,
			})
			if err == nil {
				id = f.ID
			}
			return err
		})
		if err != nil {
			return transport.Delivered{}, fmt.Errorf("slack: upload %s: %w", ev.File.Name, err)
		}
		return transport.Delivered{Ref: id, Thread: ev.Thread}, nil
	}
	opts := MessageOptions(ev)
	if replaces != "" {
		s.mu.Lock()
		ch, ok := s.channels[replaces]
		s.mu.Unlock()
		if ok {
			channel = ch
		}
		err := s.retry(ctx, func() error {
			_, _, _, err := s.api.UpdateMessageContext(ctx, channel, replaces, opts...)
			return err
		})
		if err != nil {
			return transport.Delivered{}, fmt.Errorf("slack: edit: %w", err)
		}
		return transport.Delivered{Ref: replaces, Thread: ev.Thread}, nil
	}
	if ev.Thread != "" {
		opts = append(opts, slack.MsgOptionTS(ev.Thread))
	}
	var ch, ts string
	err := s.retry(ctx, func() error {
		var err error
		ch, ts, err = s.api.PostMessageContext(ctx, channel, opts...)
		return err
	})
	if err != nil {
		return transport.Delivered{}, fmt.Errorf("slack: post: %w", err)
	}
	s.mu.Lock()
	s.channels[ts] = ch
	s.mu.Unlock()
	th := ev.Thread
	if th == "" {
		th = ts
	}
	return transport.Delivered{Ref: ts, Thread: th}, nil
}

// MessageOptions are the text and, for a question, the buttons of ev: one
// actions block whose block id is the event's id and whose buttons' values
// are the choices, so a press names both.
func MessageOptions(ev transport.Event) []slack.MsgOption {
	if ev.Question == nil {
		text := ""
		if ev.Notice != nil {
			text = ev.Notice.Text
		}
		return []slack.MsgOption{slack.MsgOptionText(text, false), slack.MsgOptionBlocks()}
	}
	q := ev.Question
	blocks := []slack.Block{slack.NewSectionBlock(slack.NewTextBlockObject(slack.PlainTextType, q.Text, false, false), nil, nil)}
	if len(q.Choices) > 0 {
		var els []slack.BlockElement
		for i, c := range q.Choices {
			b := slack.NewButtonBlockElement(fmt.Sprintf("choice-%d", i), c, slack.NewTextBlockObject(slack.PlainTextType, c, false, false))
			switch c {
			case "Approve", "Commit":
				b.Style = slack.StylePrimary
			case "Deny", "Roll back", "Stop":
				b.Style = slack.StyleDanger
			}
			els = append(els, b)
		}
		blocks = append(blocks, slack.NewActionBlock(ev.ID, els...))
	}
	return []slack.MsgOption{slack.MsgOptionText(q.Text, false), slack.MsgOptionBlocks(blocks...)}
}
