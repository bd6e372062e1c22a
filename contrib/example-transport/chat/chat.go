// Package chat is an example Kule transport for a small HTTP chat service:
// messages are posted with POST {api}/post and read with
// GET {api}/messages?channel=C&after=N, both with the bot's token as a
// bearer token. It shows what every transport does: it carries messages
// both ways and decides nothing.
//
// The token it is given is a placeholder. Kule's proxy, which the plugin
// reaches everything through, puts the real token into the Authorization
// header of requests to the hosts the plugin's manifest names, so the
// plugin never holds it.
package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kulehq/kule/sdk/transport"
)

// DefaultAPI is the service's own address; config.toml's api replaces it
// (a stand-in on this machine).
const DefaultAPI = "https://chat.example.com/api/"

// Config is what the transport needs.
type Config struct {
	API     string       // the service's base address, ending in "/"
	Token   string       // the bot's token (a placeholder under Kule)
	Channel string       // the channel it posts in
	Client  *http.Client // what it sends through (Kule's proxy)
}

// Chat is the transport.
type Chat struct {
	cfg Config

	mu    sync.Mutex
	after int // the last message read from the service
	inbox *transport.Inbox
}

var _ transport.Transport = (*Chat)(nil)

// New returns the transport of cfg.
func New(cfg Config) (*Chat, error) {
	if cfg.API == "" {
		cfg.API = DefaultAPI
	}
	if !strings.HasSuffix(cfg.API, "/") {
		cfg.API += "/"
	}
	if _, err := url.Parse(cfg.API); err != nil {
		return nil, fmt.Errorf("chat: the api address %q: %w", cfg.API, err)
	}
	if cfg.Token == "" || cfg.Channel == "" {
		return nil, errors.New("chat: no token or no channel")
	}
	if cfg.Client == nil {
		cfg.Client = http.DefaultClient
	}
	return &Chat{cfg: cfg, inbox: transport.NewInbox(0)}, nil
}

// Info implements transport.Transport: no optional abilities.
func (c *Chat) Info(context.Context) (transport.Info, error) {
	return transport.Info{Name: "example-chat"}, nil
}

// Deliver implements transport.Transport. Questions are posted as text:
// an answer comes back as a reply in the thread.
func (c *Chat) Deliver(ctx context.Context, ev transport.Event, replaces string) (transport.Delivered, error) {
	text := ""
	switch {
	case ev.Notice != nil:
		text = ev.Notice.Text
	case ev.Question != nil:
		text = ev.Question.Text
		if len(ev.Question.Choices) > 0 {
			text += "\n(answer with one of: " + strings.Join(ev.Question.Choices, ", ") + ")"
		}
	case ev.File != nil:
		text = ev.File.Comment + "\n" + string(ev.File.Content)
	default:
		return transport.Delivered{}, transport.ErrEmptyEvent
	}
	channel := ev.Channel
	if channel == "" {
		channel = c.cfg.Channel
	}
	body, _ := json.Marshal(map[string]string{"channel": channel, "thread": ev.Thread, "text": text})
	var out struct {
		Ref string `json:"ref"`
	}
	if err := c.call(ctx, http.MethodPost, "post", body, &out); err != nil {
		return transport.Delivered{}, err
	}
	thread := ev.Thread
	if thread == "" {
		thread = out.Ref
	}
	return transport.Delivered{Ref: out.Ref, Thread: thread}, nil
}

// Receive implements transport.Transport: it asks the service for what
// arrived since the last call, and hands it out through an Inbox.
func (c *Chat) Receive(ctx context.Context, cursor string, waitMillis int64) (transport.Batch, error) {
	deadline := time.Now().Add(time.Duration(waitMillis) * time.Millisecond)
	for {
		if err := c.poll(ctx); err != nil {
			return transport.Batch{Cursor: cursor}, err
		}
		b, err := c.inbox.Receive(ctx, cursor, 0)
		if err != nil || len(b.Incoming) > 0 || !time.Now().Before(deadline) {
			return b, err
		}
		select {
		case <-ctx.Done():
			return transport.Batch{Cursor: cursor}, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// poll reads the service's new messages into the inbox.
func (c *Chat) poll(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out struct {
		Messages []struct {
			ID     int    `json:"id"`
			Author string `json:"author"`
			Text   string `json:"text"`
			Thread string `json:"thread"`
		} `json:"messages"`
	}
	q := url.Values{"channel": {c.cfg.Channel}, "after": {strconv.Itoa(c.after)}}
	if err := c.call(ctx, http.MethodGet, "messages?"+q.Encode(), nil, &out); err != nil {
		return err
	}
	for _, m := range out.Messages {
		if m.ID <= c.after {
			continue
		}
		c.after = m.ID
		c.inbox.Push(transport.Incoming{Author: m.Author, Text: m.Text, Thread: m.Thread, Ref: strconv.Itoa(m.ID), Channel: c.cfg.Channel})
	}
	return nil
}

// call sends one request with the bot's token and reads its JSON answer.
func (c *Chat) call(ctx context.Context, method, path string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.cfg.API+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.cfg.Client.Do(req)
	if err != nil {
		return fmt.Errorf("chat: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("chat: %s %s: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("chat: %s %s: the service answered %s: %s", method, path, resp.Status, bytes.TrimSpace(b))
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("chat: %s %s: the answer is not JSON: %w", method, path, err)
	}
	return nil
}
