// Package discordtest is a local stand-in of Discord's REST API and
// gateway on loopback, for tests: it answers the calls the Discord
// transport makes, keeps what was posted, checks the token on every REST
// call and in the gateway's identify, applies a rate limit, and dispatches
// people's messages, commands and button presses down the gateway as
// Discord does.
package discordtest

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

// Post is one message the stand-in received.
type Post struct {
	Method   string // "send", "edit"
	Channel  string
	ID       string
	Content  string
	Ref      string   // the message it replies to
	Buttons  []string // custom ids
	File     string
	FileData string
}

// Server is the stand-in.
type Server struct {
	API   string // the REST base, ending in "/"
	Token string
	// RateLimit, when > 0, lets that many posts through per Window; the
	// next is answered 429 with retry_after.
	RateLimit int
	Window    time.Duration

	srv        *httptest.Server
	mu         sync.Mutex
	posts      []Post
	auth       []string
	identified []string // tokens sent in identify and resume
	threads    map[string]string
	acks       int
	conns      int
	violations int
	ws         *websocket.Conn
	wsMu       sync.Mutex
	seq        int
	id         int
	windowAt   time.Time
	inWindow   int
	limitTill  time.Time
}

// Start starts a stand-in for the bot token.
func Start(token string) *Server {
	s := &Server{Token: token, Window: time.Second, threads: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", s.rest)
	mux.HandleFunc("/gateway", s.gateway)
	mux.HandleFunc("/gateway/", s.gateway)
	s.srv = httptest.NewServer(mux)
	s.API = s.srv.URL + "/api/"
	return s
}

// Close stops the stand-in.
func (s *Server) Close() {
	s.Drop()
	s.srv.CloseClientConnections()
	s.srv.Close()
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) nextID() string {
	s.id++
	return fmt.Sprintf("9%017d", s.id)
}

func (s *Server) rest(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/api/")
	authz := r.Header.Get("Authorization")
	s.mu.Lock()
	s.auth = append(s.auth, authz)
	s.mu.Unlock()
	if strings.HasPrefix(path, "interactions/") {
		s.mu.Lock()
		s.acks++
		s.mu.Unlock()
		w.WriteHeader(204)
		return
	}
	if authz != "Bot "+s.Token {
		writeJSON(w, 401, map[string]any{"message": "401: Unauthorized", "code": 0})
		return
	}
	parts := strings.Split(path, "/")
	switch {
	case path == "gateway" || path == "gateway/bot":
		writeJSON(w, 200, map[string]any{"url": "ws" + strings.TrimPrefix(s.srv.URL, "http") + "/gateway"})
	case len(parts) == 2 && parts[0] == "channels" && r.Method == http.MethodGet:
		s.mu.Lock()
		parent, ok := s.threads[parts[1]]
		s.mu.Unlock()
		if ok {
			writeJSON(w, 200, map[string]any{"id": parts[1], "type": 11, "parent_id": parent})
		} else {
			writeJSON(w, 200, map[string]any{"id": parts[1], "type": 0})
		}
	case len(parts) == 5 && parts[0] == "channels" && parts[4] == "threads":
		s.mu.Lock()
		s.threads[parts[3]] = parts[1]
		s.mu.Unlock()
		writeJSON(w, 201, map[string]any{"id": parts[3], "type": 11, "parent_id": parts[1]})
	case len(parts) == 3 && parts[0] == "channels" && parts[2] == "messages" && r.Method == http.MethodPost:
		if !s.admit(w) {
			return
		}
		p := s.readMessage(r)
		p.Method, p.Channel = "send", parts[1]
		s.mu.Lock()
		p.ID = s.nextID()
		s.posts = append(s.posts, p)
		s.mu.Unlock()
		writeJSON(w, 200, map[string]any{"id": p.ID, "channel_id": p.Channel, "content": p.Content})
	case len(parts) == 4 && parts[0] == "channels" && parts[2] == "messages" && r.Method == http.MethodPatch:
		p := s.readMessage(r)
		p.Method, p.Channel, p.ID = "edit", parts[1], parts[3]
		s.mu.Lock()
		s.posts = append(s.posts, p)
		s.mu.Unlock()
		writeJSON(w, 200, map[string]any{"id": p.ID, "channel_id": p.Channel, "content": p.Content})
	case len(parts) == 3 && parts[0] == "applications" && parts[2] == "commands":
		writeJSON(w, 201, map[string]any{"id": "CMD1", "name": "kule"})
	default:
		writeJSON(w, 404, map[string]any{"message": "404: Not Found", "code": 0})
	}
}

type message struct {
	Content    string `json:"content"`
	Components []struct {
		Components []struct {
			CustomID string `json:"custom_id"`
		} `json:"components"`
	} `json:"components"`
	Reference *struct {
		MessageID string `json:"message_id"`
	} `json:"message_reference"`
}

func (s *Server) readMessage(r *http.Request) Post {
	var m message
	var p Post
	if mr, err := r.MultipartReader(); err == nil {
		for {
			part, err := mr.NextPart()
			if err != nil {
				break
			}
			b, _ := io.ReadAll(part)
			if part.FormName() == "payload_json" {
				_ = json.Unmarshal(b, &m)
			} else {
				p.File, p.FileData = part.FileName(), string(b)
			}
		}
	} else {
		_ = json.NewDecoder(r.Body).Decode(&m)
	}
	p.Content = m.Content
	if m.Reference != nil {
		p.Ref = m.Reference.MessageID
	}
	for _, row := range m.Components {
		for _, c := range row.Components {
			p.Buttons = append(p.Buttons, c.CustomID)
		}
	}
	return p
}

// admit applies the rate limit; a post inside a retry_after is a violation.
func (s *Server) admit(w http.ResponseWriter) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.RateLimit <= 0 {
		return true
	}
	now := time.Now()
	limited := func() bool {
		w.Header().Set("Retry-After", "1")
		writeJSON(w, 429, map[string]any{"message": "You are being rate limited.", "retry_after": 1.0, "global": false})
		return false
	}
	if now.Before(s.limitTill) {
		s.violations++
		return limited()
	}
	if now.Sub(s.windowAt) >= s.Window {
		s.windowAt, s.inWindow = now, 0
	}
	if s.inWindow >= s.RateLimit {
		s.limitTill = now.Add(time.Second)
		return limited()
	}
	s.inWindow++
	return true
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

func (s *Server) gateway(w http.ResponseWriter, r *http.Request) {
	c, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	s.mu.Lock()
	if s.ws != nil {
		s.ws.Close()
	}
	s.ws = c
	s.mu.Unlock()
	s.write(c, map[string]any{"op": 10, "d": map[string]any{"heartbeat_interval": 45000}})
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
		var f struct {
			Op int `json:"op"`
			D  struct {
				Token string `json:"token"`
			} `json:"d"`
		}
		if json.Unmarshal(b, &f) != nil {
			continue
		}
		switch f.Op {
		case 1:
			s.write(c, map[string]any{"op": 11})
		case 2, 6:
			s.mu.Lock()
			s.identified = append(s.identified, f.D.Token)
			ok := f.D.Token == "Bot "+s.Token || f.D.Token == s.Token
			s.mu.Unlock()
			if !ok {
				s.wsMu.Lock()
				_ = c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(4004, "Authentication failed."))
				s.wsMu.Unlock()
				c.Close()
				return
			}
			s.mu.Lock()
			s.conns++
			s.mu.Unlock()
			if f.Op == 2 {
				s.dispatch(c, "READY", map[string]any{"v": 9, "user": map[string]any{"id": "BOT", "username": "kule", "bot": true}, "session_id": "S1", "application": map[string]any{"id": "APP"}, "guilds": []any{}})
			} else {
				s.dispatch(c, "RESUMED", map[string]any{})
			}
		}
	}
}

func (s *Server) write(c *websocket.Conn, v any) error {
	s.wsMu.Lock()
	defer s.wsMu.Unlock()
	return c.WriteJSON(v)
}

func (s *Server) dispatch(c *websocket.Conn, t string, d any) error {
	s.mu.Lock()
	s.seq++
	n := s.seq
	s.mu.Unlock()
	return s.write(c, map[string]any{"op": 0, "s": n, "t": t, "d": d})
}

// send dispatches an event once a session is up.
func (s *Server) send(t string, d any) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		s.mu.Lock()
		c, up := s.ws, s.conns > 0
		s.mu.Unlock()
		if c != nil && up {
			if err := s.dispatch(c, t, d); err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("discordtest: no gateway session in 30 s")
		}
		time.Sleep(10 * time.Millisecond) // polling for a session; the deadline only ends a broken run
	}
}

// Message dispatches a person's message (guild "" for a direct message;
// replyTo, when set, is the message it replies to).
func (s *Server) Message(user, channel, guild, content, id, replyTo string) error {
	m := map[string]any{"id": id, "channel_id": channel, "content": content, "author": map[string]any{"id": user, "username": user}}
	if guild != "" {
		m["guild_id"] = guild
	}
	if replyTo != "" {
		m["message_reference"] = map[string]any{"message_id": replyTo, "channel_id": channel}
	}
	return s.send("MESSAGE_CREATE", m)
}

// BotMessage dispatches a message of a bot.
func (s *Server) BotMessage(channel, guild, content, id string) error {
	return s.send("MESSAGE_CREATE", map[string]any{"id": id, "channel_id": channel, "guild_id": guild, "content": content, "author": map[string]any{"id": "BOT", "bot": true}})
}

func (s *Server) interaction(user, channel, guild string, typ int, data, message map[string]any) error {
	s.mu.Lock()
	id := s.nextID()
	s.mu.Unlock()
	i := map[string]any{"id": id, "application_id": "APP", "type": typ, "data": data, "channel_id": channel, "token": "itoken-" + id, "version": 1}
	if guild != "" {
		i["guild_id"] = guild
		i["member"] = map[string]any{"user": map[string]any{"id": user}}
	} else {
		i["user"] = map[string]any{"id": user}
	}
	if message != nil {
		i["message"] = message
	}
	return s.send("INTERACTION_CREATE", i)
}

// Press dispatches a button press on message msgID.
func (s *Server) Press(user, channel, guild, msgID, customID string) error {
	return s.interaction(user, channel, guild, 3, map[string]any{"custom_id": customID, "component_type": 2}, map[string]any{"id": msgID, "channel_id": channel})
}

// Command dispatches "/kule <text>".
func (s *Server) Command(user, channel, guild, text string) error {
	return s.interaction(user, channel, guild, 2, map[string]any{"id": "CMD1", "name": "kule", "type": 1, "options": []any{map[string]any{"name": "command", "type": 3, "value": text}}}, nil)
}

// Drop closes the gateway connection, as Discord does now and then.
func (s *Server) Drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ws != nil {
		s.ws.Close()
		s.ws = nil
	}
}

// Posts returns what was posted.
func (s *Server) Posts() []Post {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Post(nil), s.posts...)
}

// Identified returns the tokens the gateway was sent (identify, resume).
func (s *Server) Identified() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.identified...)
}

// Auth returns every REST Authorization header.
func (s *Server) Auth() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auth...)
}

// Acks counts the interactions acknowledged.
func (s *Server) Acks() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acks
}

// Conns counts gateway sessions (identify or resume accepted).
func (s *Server) Conns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

// Violations counts posts made while a retry_after still ran.
func (s *Server) Violations() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.violations
}
