package chat

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/kulehq/kule/sdk/transport"
)

// standIn is the chat service: it takes only the token it was given.
type standIn struct {
	mu    sync.Mutex
	token string
	posts []map[string]string
	msgs  []map[string]any
}

func (s *standIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer "+s.token {
		http.Error(w, "not authed", http.StatusUnauthorized)
		return
	}
	switch r.URL.Path {
	case "/post":
		var p map[string]string
		_ = json.NewDecoder(r.Body).Decode(&p)
		s.posts = append(s.posts, p)
		_ = json.NewEncoder(w).Encode(map[string]string{"ref": strconv.Itoa(len(s.posts))})
	case "/messages":
		after, _ := strconv.Atoi(r.URL.Query().Get("after"))
		var out []map[string]any
		for _, m := range s.msgs {
			if m["id"].(int) > after {
				out = append(out, m)
			}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"messages": out})
	default:
		http.NotFound(w, r)
	}
}

// TestChat: a notice is posted with the token, what people wrote comes back
// once by cursor, and a wrong token is the service's refusal, said.
func TestChat(t *testing.T) {
	s := &standIn{token: "tok", msgs: []map[string]any{{"id": 1, "author": "U1", "text": "hello"}}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	ctx := context.Background()
	c, err := New(Config{API: srv.URL, Token: "tok", Channel: "general"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Deliver(ctx, transport.Event{ID: "e1", Notice: &transport.Notice{Text: "hi"}}, "")
	if err != nil || d.Ref != "1" || d.Thread != "1" || len(s.posts) != 1 || s.posts[0]["text"] != "hi" || s.posts[0]["channel"] != "general" {
		t.Fatalf("deliver = %+v, %v; posts %v", d, err, s.posts)
	}
	b, err := c.Receive(ctx, "", 0)
	if err != nil || len(b.Incoming) != 1 || b.Incoming[0].Text != "hello" || b.Incoming[0].Author != "U1" {
		t.Fatalf("receive = %+v, %v", b, err)
	}
	if b, err = c.Receive(ctx, b.Cursor, 0); err != nil || len(b.Incoming) != 0 {
		t.Fatalf("receive again = %+v, %v", b, err)
	}
	if _, err := c.Deliver(ctx, transport.Event{}, ""); err == nil {
		t.Error("an empty event was posted")
	}
	bad, _ := New(Config{API: srv.URL, Token: "wrong", Channel: "general"})
	if _, err := bad.Deliver(ctx, transport.Event{ID: "e2", Notice: &transport.Notice{Text: "x"}}, ""); err == nil {
		t.Error("a wrong token was not refused")
	}
}

// FuzzMessages feeds the service's answer to GET messages: whatever it
// says, Receive returns an error or items, and never panics.
func FuzzMessages(f *testing.F) {
	f.Add([]byte(`{"messages":[{"id":1,"author":"U1","text":"hi","thread":"3"}]}`))
	f.Add([]byte(`{"messages":[{"id":-1},{"id":"x"}]}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, body []byte) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) }))
		defer srv.Close()
		c, err := New(Config{API: srv.URL, Token: "tok", Channel: "general"})
		if err != nil {
			t.Fatal(err)
		}
		b, err := c.Receive(context.Background(), "", 0)
		if err == nil {
			for _, in := range b.Incoming {
				if in.Channel != "general" {
					t.Fatalf("an item of another channel: %+v", in)
				}
			}
		}
	})
}
