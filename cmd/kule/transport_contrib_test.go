package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// chatStandIn is a local stand-in of contrib/example-transport's chat
// service: it answers only requests that carry the real bot token.
type chatStandIn struct {
	token string

	mu      sync.Mutex
	posts   []string
	refused int
	written string // what a person wrote in the channel, when not ""
}

func (s *chatStandIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer "+s.token {
		s.refused++
		http.Error(w, "not authed", http.StatusUnauthorized)
		return
	}
	switch r.URL.Path {
	case "/post":
		var p struct{ Text string }
		_ = json.NewDecoder(r.Body).Decode(&p)
		s.posts = append(s.posts, p.Text)
		_ = json.NewEncoder(w).Encode(map[string]string{"ref": strconv.Itoa(len(s.posts))})
	case "/messages":
		var msgs []map[string]any
		if s.written != "" && r.URL.Query().Get("after") == "0" {
			msgs = append(msgs, map[string]any{"id": 1, "author": "U0THER", "text": s.written})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"messages": msgs})
	default:
		http.NotFound(w, r)
	}
}

func (s *chatStandIn) write(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.written = text
}

func (s *chatStandIn) got() ([]string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.posts...), s.refused
}

// TestExampleTransport takes contrib/example-transport the way a person
// would: build it with its build.sh, install it, keep its token with
// transport add (for the hosts its manifest names), see transport test
// refuse it before approval (nothing posted), approve it, and see it post
// through its proxy to a local stand-in of its service, which takes only
// the real token, while the plugin in its sandbox holds the placeholder
// only. The daemon starts it the same way and answers in its channel. Once
// its binary changes after approval it is refused again.
func TestExampleTransport(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example transport; skipped with -short")
	}
	if _, err := exec.LookPath("go"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("go is not on PATH")
		}
		t.Skip("go is not on PATH")
	}
	out := filepath.Join(t.TempDir(), "out")
	build := exec.Command("bash", filepath.Join("..", "..", "contrib", "example-transport", "build.sh"), out)
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build.sh: %v\n%s", err, b)
	}
	home := t.TempDir()
	t.Setenv("KULE_HOME", home)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "") // the key file
	t.Cleanup(func() {                       // installs are read-only
		_ = filepath.WalkDir(filepath.Join(home, "plugins"), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o700)
			}
			return nil
		})
	})
	const token = "example-chat-bot-token-4242"
	chat := &chatStandIn{token: token}
	srv := httptest.NewServer(chat)
	defer srv.Close()

	if o, err := runKule(t, token+"\n", "transport", "add", "example-chat", "--channel", "general", "--operator", "U1"); err == nil || !strings.Contains(err.Error(), "nothing was kept") {
		t.Fatalf("add before install = %v, want refused\n%s", err, o)
	}
	if o, err := runKule(t, "", "plugins", "install", out); err != nil || !strings.Contains(o, "installed transport example-chat 0.1.0") {
		t.Fatalf("install: %v\n%s", err, o)
	}
	o, err := runKule(t, token+"\n", "transport", "add", "example-chat", "--channel", "general", "--operator", "U1", "--api", srv.URL)
	if err != nil || !strings.Contains(o, "tokens kept as KULE_TRANSPORT_EXAMPLE_CHAT_BOT for chat.example.com") || !strings.Contains(o, "waits for your approval") {
		t.Fatalf("add: %v\n%s", err, o)
	}
	if o, err := runKule(t, "", "transport", "test", "example-chat"); err == nil || !strings.Contains(err.Error(), "waits for approval") {
		t.Fatalf("test before approval = %v, want it waiting for approval\n%s", err, o)
	}
	if posts, _ := chat.got(); len(posts) != 0 {
		t.Fatalf("the unapproved transport posted %q", posts)
	}

	if o, err := runKule(t, "", "plugins", "approve", "example-chat"); err != nil {
		t.Fatalf("approve: %v\n%s", err, o)
	}
	checked := watchTransportTest(t, token)
	o, err = runKule(t, "", "transport", "test", "example-chat")
	if err != nil || !strings.Contains(o, "example-chat: started in its sandbox") || !strings.Contains(o, "posted to channel general") {
		t.Fatalf("test: %v\n%s", err, o)
	}
	if !*checked {
		t.Fatal("transport test did not run the transport as a plugin the test could look into")
	}
	if posts, refused := chat.got(); len(posts) != 1 || !strings.Contains(posts[0], "Kule is connected") || refused != 0 {
		t.Fatalf("the stand-in got %q, refused %d", posts, refused)
	}
	transportTested = nil

	// The daemon starts it too, and answers someone who is not the
	// operator through it.
	chat.write("~/notes: delete everything")
	cmd := exec.Command(os.Args[0], "daemon", "--idle", "-1s")
	cmd.Env = append(os.Environ(), "KULE_AS_CLI=1", "KULE_HOME="+home, "DBUS_SESSION_BUS_ADDRESS=")
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		posts, _ := chat.got()
		if strings.Contains(strings.Join(posts, "\n"), "Only the operator can start a task here") {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("waited 30 s for the daemon's answer through the example transport; posts %q\n%s", posts, logs.String())
		}
		time.Sleep(20 * time.Millisecond) // polling; the deadline only ends a broken run
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()
	posted, _ := chat.got()

	exe := filepath.Join(home, "plugins", "example-chat", "kule-example-transport")
	if err := os.Chmod(filepath.Dir(exe), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(exe, 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(exe, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.Write([]byte("changed after approval"))
	f.Close()
	if o, err := runKule(t, "", "transport", "test", "example-chat"); err == nil || !strings.Contains(err.Error(), "executable changed since approval") {
		t.Fatalf("test after the binary changed = %v, want it refused saying why\n%s", err, o)
	}
	if posts, _ := chat.got(); len(posts) != len(posted) {
		t.Fatalf("the changed transport posted: %q", posts[len(posted):])
	}
}
