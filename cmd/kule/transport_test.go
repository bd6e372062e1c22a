package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/plugins/transport/discord/discordtest"
	"github.com/kulehq/kule/plugins/transport/slack/slacktest"
)

// TestTransportCommands: add keeps the tokens as secrets and the settings
// in config.toml, list shows them, test starts the transport as the daemon
// does (out of process, placeholders for the tokens) and posts to the
// service (a local stand-in of Slack, which takes only the real tokens),
// remove drops the settings; and a daemon started with them answers
// /kule status in the channel.
func TestTransportCommands(t *testing.T) {
	home := t.TempDir()
	t.Setenv("KULE_HOME", home)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "") // the key file
	srv := slacktest.Start("xoxb-cli-bot", "xapp-cli-app")
	defer srv.Close()

	if out, err := runKule(t, "xoxb-cli-bot\nxapp-cli-app\n", "transport", "add", "slack", "--channel", "C0KULE", "--api", srv.URL); err == nil {
		t.Fatalf("add without an operator passed:\n%s", out)
	}
	out, err := runKule(t, "xoxb-cli-bot\nxapp-cli-app\n", "transport", "add", "slack", "--channel", "C0KULE", "--operator", "U0PERATOR", "--api", srv.URL, "--folder", "~/notes")
	if err != nil || !strings.Contains(out, "tokens kept as KULE_TRANSPORT_SLACK_BOT, KULE_TRANSPORT_SLACK_APP for slack.com") {
		t.Fatalf("add: %v\n%s", err, out)
	}
	cfg, err := os.ReadFile(filepath.Join(home, "config.toml"))
	if err != nil || strings.Contains(string(cfg), "xoxb-") || !strings.Contains(string(cfg), `operators = ["U0PERATOR"]`) {
		t.Fatalf("config.toml (%v):\n%s", err, cfg)
	}
	out, err = runKule(t, "", "transport", "list")
	if err != nil || !strings.Contains(out, "slack") || !strings.Contains(out, "U0PERATOR") || !strings.Contains(out, "kept") {
		t.Fatalf("list: %v\n%s", err, out)
	}
	checked := watchTransportTest(t, "xoxb-cli-bot", "xapp-cli-app")
	out, err = runKule(t, "", "transport", "test", "slack")
	if err != nil || !strings.Contains(out, "slack: started in its sandbox") || !strings.Contains(out, "posted to channel C0KULE") {
		t.Fatalf("test: %v\n%s", err, out)
	}
	if !*checked {
		t.Fatal("transport test did not run the transport as a plugin the test could look into")
	}
	if ps := srv.Posts(); len(ps) != 1 || !strings.Contains(ps[0].Text, "Kule is connected") || srv.Violations() != 0 {
		t.Fatalf("the stand-in got %+v, violations %d", ps, srv.Violations())
	}
	transportTested = nil

	// The daemon connects the transport and answers in the channel.
	conns := srv.Conns()
	cmd := exec.Command(os.Args[0], "daemon", "--idle", "-1s")
	cmd.Env = append(os.Environ(), "KULE_AS_CLI=1", "KULE_HOME="+home, "DBUS_SESSION_BUS_ADDRESS=")
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	for deadline := time.Now().Add(30 * time.Second); srv.Conns() <= conns; {
		if time.Now().After(deadline) {
			t.Fatalf("the daemon never connected to the stand-in\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond) // polling; the deadline only ends a broken run
	}
	if _, err := srv.Slash("U0THER", "C0KULE", "status"); err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		var texts []string
		for _, p := range srv.Posts() {
			texts = append(texts, p.Text)
		}
		if strings.Contains(strings.Join(texts, "\n"), "No tasks.") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 30 s for the daemon's status in the channel; posts %q\n%s", texts, logs.String())
		}
		time.Sleep(20 * time.Millisecond) // polling; the deadline only ends a broken run
	}

	out, err = runKule(t, "", "transport", "remove", "slack")
	if err != nil || !strings.Contains(out, "removed slack") {
		t.Fatalf("remove: %v\n%s", err, out)
	}
	if out, err := runKule(t, "", "transport", "test", "slack"); err == nil {
		t.Fatalf("test after remove passed:\n%s", out)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// watchTransportTest makes the next `kule transport test` show the test
// its running plugin: a process under the plugin's sandbox has the
// plugin's settings, and none holds any of tokens in its environment or
// (the plugin's) writable memory. The result says whether it looked.
func watchTransportTest(t *testing.T, tokens ...string) *bool {
	t.Helper()
	looked := new(bool)
	transportTested = func(r *kernel.RunningTransport) {
		*looked = true
		holdsPlaceholdersOnly(t, r, tokens...)
	}
	t.Cleanup(func() { transportTested = nil })
	return looked
}

// TestTransportTestDiscord: `kule transport test discord` starts the
// Discord cockpit out of process and posts through its proxy to a local
// stand-in that takes only the real token, while the plugin holds only the
// placeholder.
func TestTransportTestDiscord(t *testing.T) {
	home := t.TempDir()
	t.Setenv("KULE_HOME", home)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "") // the key file
	const token = "discord-cli-test-token-4242"
	srv := discordtest.Start(token)
	defer srv.Close()
	if out, err := runKule(t, token+"\n", "transport", "add", "discord", "--channel", "100", "--operator", "200", "--api", srv.API); err != nil {
		t.Fatalf("add: %v\n%s", err, out)
	}
	checked := watchTransportTest(t, token)
	out, err := runKule(t, "", "transport", "test", "discord")
	if err != nil || !strings.Contains(out, "posted to channel 100") {
		t.Fatalf("test: %v\n%s", err, out)
	}
	if !*checked {
		t.Fatal("transport test did not run the transport as a plugin the test could look into")
	}
	if ps := srv.Posts(); len(ps) != 1 || !strings.Contains(ps[0].Content, "Kule is connected") || srv.Violations() != 0 {
		t.Fatalf("the stand-in got %+v, violations %d", ps, srv.Violations())
	}
}
