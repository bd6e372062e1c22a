// Package slacktest is a local stand-in of Slack's Web API and Socket Mode
// on loopback, for tests: it answers the calls the Slack transport makes,
// keeps what was posted, checks the tokens, applies a rate limit, and
// sends people's messages, slash commands and button presses down the
// Socket Mode WebSocket as Slack does.
package slacktest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Post is one message the stand-in received (chat.postMessage or
// chat.update), or one file (files.completeUploadExternal).
type Post struct {
	Method   string
	Channel  string
	Text     string
	ThreadTS string
	TS       string
	Buttons  []Button
	File     string // the file's name, for an upload
	Content  string // the file's content
}

// Button is a button of a posted message.
type Button struct{ BlockID, Value string }

// Server is the stand-in.
type Server struct {
	URL      string // the Web API's URL, ending in "/api/"
	BotToken string
	AppToken string
	// RateLimit, when > 0, lets that many posts through per window of
	// Window; the next is answered 429 with Retry-After.
	RateLimit int
	Window    time.Duration

	srv *httptest.Server
	mu  sync.Mutex
	// what was seen
	posts      []Post
	auth       []string // every Authorization header, as sent
	conns      int
	violations int // posts made before a Retry-After had passed
	// state
	ws        *websocket.Conn
	wsMu      sync.Mutex // serialises writes to ws
	acks      map[string]bool
	seq       int
	ts        int
	windowAt  time.Time
	inWindow  int
	limitTill time.Time
	uploads   map[string]string // file id → content
	names     map[string]string // file id → name
}

// Start starts a stand-in with the given tokens.
func Start(botToken, appToken string) *Server {
	s := &Server{BotToken: botToken, AppToken: appToken, Window: time.Second, acks: map[string]bool{}, uploads: map[string]string{}, names: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", s.api)
	mux.HandleFunc("/upload/", s.upload)
	mux.HandleFunc("/link/", s.link)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL + "/api/"
	return s
}

// Close stops the stand-in.
func (s *Server) Close() {
	s.mu.Lock()
	if s.ws != nil {
		s.ws.Close()
	}
	s.mu.Unlock()
	s.srv.CloseClientConnections()
	s.srv.Close()
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) api(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	authz := r.Header.Get("Authorization")
	s.mu.Lock()
	s.auth = append(s.auth, authz)
	s.mu.Unlock()
	_ = r.ParseForm()
	if r.PostForm.Has("token") {
		// Tokens travel in the Authorization header only.
		writeJSON(w, map[string]any{"ok": false, "error": "token_in_body"})
		return
	}
	want := s.BotToken
	if method == "apps.connections.open" {
		want = s.AppToken
	}
	if authz != "Bearer "+want {
		writeJSON(w, map[string]any{"ok": false, "error": "invalid_auth"})
		return
	}
	switch method {
	case "auth.test":
		writeJSON(w, map[string]any{"ok": true, "user_id": "UBOT", "bot_id": "BBOT", "team_id": "T1"})
	case "apps.connections.open":
		s.mu.Lock()
		s.seq++
		n := s.seq
		s.mu.Unlock()
		writeJSON(w, map[string]any{"ok": true, "url": fmt.Sprintf("ws%s/link/?ticket=%d", strings.TrimPrefix(s.srv.URL, "http"), n)})
	case "chat.postMessage", "chat.update":
		if !s.admit(w) {
			return
		}
		p := Post{Method: method, Channel: r.Form.Get("channel"), Text: r.Form.Get("text"), ThreadTS: r.Form.Get("thread_ts"), TS: r.Form.Get("ts")}
		p.Buttons = buttons(r.Form.Get("blocks"))
		s.mu.Lock()
		if method == "chat.postMessage" {
			s.ts++
			p.TS = fmt.Sprintf("1700000000.%06d", s.ts)
		}
		s.posts = append(s.posts, p)
		s.mu.Unlock()
		writeJSON(w, map[string]any{"ok": true, "channel": p.Channel, "ts": p.TS})
	case "files.getUploadURLExternal":
		s.mu.Lock()
		s.seq++
		id := fmt.Sprintf("F%d", s.seq)
		s.names[id] = r.Form.Get("filename")
		s.mu.Unlock()
		writeJSON(w, map[string]any{"ok": true, "upload_url": s.srv.URL + "/upload/" + id, "file_id": id})
	case "files.completeUploadExternal":
		if !s.admit(w) {
			return
		}
		var files []struct {
			ID    string `json:"id"`
			Title string `json:"title"`
		}
		_ = json.Unmarshal([]byte(r.Form.Get("files")), &files)
		s.mu.Lock()
		for _, f := range files {
			s.posts = append(s.posts, Post{Method: method, Channel: r.Form.Get("channel_id"), ThreadTS: r.Form.Get("thread_ts"), Text: r.Form.Get("initial_comment"), File: s.names[f.ID], Content: s.uploads[f.ID]})
		}
		s.mu.Unlock()
		writeJSON(w, map[string]any{"ok": true, "files": files})
	default:
		writeJSON(w, map[string]any{"ok": false, "error": "unknown_method"})
	}
}

// admit applies the rate limit: a post inside a Retry-After is counted as a
// violation (a client that does not wait).
func (s *Server) admit(w http.ResponseWriter) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.RateLimit <= 0 {
		return true
	}
	now := time.Now()
	if now.Before(s.limitTill) {
		s.violations++
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		return false
	}
	if now.Sub(s.windowAt) >= s.Window {
		s.windowAt, s.inWindow = now, 0
	}
	if s.inWindow >= s.RateLimit {
		s.limitTill = now.Add(time.Second)
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		return false
	}
	s.inWindow++
	return true
}

func buttons(blocks string) []Button {
	var bs []struct {
		Type     string `json:"type"`
		BlockID  string `json:"block_id"`
		Elements []struct {
			Value string `json:"value"`
		} `json:"elements"`
	}
	if json.Unmarshal([]byte(blocks), &bs) != nil {
		return nil
	}
	var out []Button
	for _, b := range bs {
		if b.Type != "actions" {
			continue
		}
		for _, e := range b.Elements {
			out = append(out, Button{BlockID: b.BlockID, Value: e.Value})
		}
	}
	return out
}

func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, "/upload/")
	var body []byte
	if mr, err := r.MultipartReader(); err == nil {
		for {
			p, err := mr.NextPart()
			if err != nil {
				break
			}
			b, _ := io.ReadAll(p)
			body = append(body, b...)
		}
	} else {
		body, _ = io.ReadAll(r.Body)
	}
	s.mu.Lock()
	s.uploads[id] = string(body)
	s.mu.Unlock()
	w.WriteHeader(200)
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

func (s *Server) link(w http.ResponseWriter, r *http.Request) {
	c, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	s.mu.Lock()
	if s.ws != nil {
		s.ws.Close()
	}
	s.ws = c
	s.conns++
	s.mu.Unlock()
	s.write(c, map[string]any{"type": "hello", "num_connections": 1, "connection_info": map[string]any{"app_id": "A1"}})
	done := make(chan struct{})
	go func() { // Slack pings; the client's dead-man timer wants it
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				s.wsMu.Lock()
				err := c.WriteControl(websocket.PingMessage, nil, time.Now().Add(5*time.Second))
				s.wsMu.Unlock()
				if err != nil {
					return
				}
			}
		}
	}()
	defer close(done)
	defer func() {
		s.mu.Lock()
		if s.ws == c {
			s.ws = nil
		}
		s.mu.Unlock()
	}()
	for {
		_, b, err := c.ReadMessage()
		if err != nil {
			return
		}
		var ack struct {
			EnvelopeID string `json:"envelope_id"`
		}
		if json.Unmarshal(b, &ack) == nil && ack.EnvelopeID != "" {
			s.mu.Lock()
			s.acks[ack.EnvelopeID] = true
			s.mu.Unlock()
		}
	}
}

func (s *Server) write(c *websocket.Conn, v any) error {
	s.wsMu.Lock()
	defer s.wsMu.Unlock()
	return c.WriteJSON(v)
}

// envelope sends one Socket Mode request once a client is connected and
// returns its envelope id.
func (s *Server) envelope(typ string, payload any) (string, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		s.mu.Lock()
		c := s.ws
		s.seq++
		id := fmt.Sprintf("env-%d", s.seq)
		s.mu.Unlock()
		if c != nil {
			if err := s.write(c, map[string]any{"envelope_id": id, "type": typ, "payload": payload, "accepts_response_payload": false}); err == nil {
				return id, nil
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("slacktest: no Socket Mode client connected in 30 s")
		}
		time.Sleep(10 * time.Millisecond) // polling for a client; the deadline only ends a broken run
	}
}

// Message sends a person's message (threadTS "" for a top-level one;
// channelType "im" for a direct message).
func (s *Server) Message(user, channel, channelType, text, ts, threadTS string) (string, error) {
	ev := map[string]any{"type": "message", "user": user, "text": text, "channel": channel, "channel_type": channelType, "ts": ts, "event_ts": ts}
	if threadTS != "" {
		ev["thread_ts"] = threadTS
	}
	return s.envelope("events_api", map[string]any{"type": "event_callback", "team_id": "T1", "api_app_id": "A1", "event": ev, "event_id": "Ev" + ts, "event_time": 1700000000})
}

// BotMessage sends a message posted by a bot (the transport's own, say).
func (s *Server) BotMessage(channel, text, ts string) (string, error) {
	ev := map[string]any{"type": "message", "subtype": "bot_message", "bot_id": "BBOT", "text": text, "channel": channel, "channel_type": "channel", "ts": ts}
	return s.envelope("events_api", map[string]any{"type": "event_callback", "team_id": "T1", "event": ev})
}

// Slash sends "/kule text".
func (s *Server) Slash(user, channel, text string) (string, error) {
	return s.envelope("slash_commands", map[string]any{"command": "/kule", "text": text, "user_id": user, "channel_id": channel, "team_id": "T1"})
}

// Press sends a button press on the message ts (in thread threadTS).
func (s *Server) Press(user, channel, threadTS, ts, blockID, value string) (string, error) {
	return s.envelope("interactive", map[string]any{
		"type": "block_actions", "user": map[string]any{"id": user}, "channel": map[string]any{"id": channel},
		"container": map[string]any{"type": "message", "message_ts": ts, "thread_ts": threadTS, "channel_id": channel},
		"actions":   []any{map[string]any{"type": "button", "block_id": blockID, "action_id": "choice-0", "value": value}},
	})
}

// Drop closes the Socket Mode connection, as Slack does now and then.
func (s *Server) Drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ws != nil {
		s.ws.Close()
		s.ws = nil
	}
}

// Acked reports whether the client acknowledged the envelope.
func (s *Server) Acked(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acks[id]
}

// Posts returns what was posted so far.
func (s *Server) Posts() []Post {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Post(nil), s.posts...)
}

// Auth returns every Authorization header the API was sent.
func (s *Server) Auth() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auth...)
}

// Conns counts the Socket Mode connections made.
func (s *Server) Conns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

// Violations counts posts made while a Retry-After was still running.
func (s *Server) Violations() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.violations
}
