package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/plugins/transport/discord/discordtest"
	"github.com/kulehq/kule/plugins/transport/slack/slacktest"
	"github.com/kulehq/kule/sdk/transport"
)

const (
	pluginBotToken = "xoxb-plugin-test-bot-4242"
	pluginAppToken = "xapp-plugin-test-app-4242"
)

// slackHome is a Kule home with the Slack cockpit set up against a local
// stand-in: the tokens kept as secrets, the stand-in's address named.
func slackHome(t testing.TB) (string, kernel.TransportSettings, *slacktest.Server) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("KULE_HOME", home)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "") // the key file
	srv := slacktest.Start(pluginBotToken, pluginAppToken)
	t.Cleanup(srv.Close)
	st, err := kernel.OpenSecrets(home)
	if err != nil {
		t.Fatal(err)
	}
	for n, v := range map[string]string{"KULE_TRANSPORT_SLACK_BOT": pluginBotToken, "KULE_TRANSPORT_SLACK_APP": pluginAppToken} {
		if _, err := st.Add(n, v, transportHosts["slack"]); err != nil {
			t.Fatal(err)
		}
	}
	tc := kernel.TransportSettings{Name: "slack", Channel: "C0KULE", Operators: []string{"U0PERATOR"}, BotSecret: "KULE_TRANSPORT_SLACK_BOT", AppSecret: "KULE_TRANSPORT_SLACK_APP", API: srv.URL}
	return home, tc, srv
}

// descendants are the pids under pid (itself included).
func descendants(pid int) []int {
	kids := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces, so cut at the last ')'.
		rest := string(b[bytes.LastIndexByte(b, ')')+1:])
		f := strings.Fields(rest)
		if len(f) < 2 {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		kids[pp] = append(kids[pp], n)
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, kids[out[i]]...)
	}
	return out
}

// inMemory reports whether the writable memory of pid holds needle.
func inMemory(t *testing.T, pid int, needle []byte) bool {
	t.Helper()
	maps, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return false
	}
	defer maps.Close()
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		return false
	}
	defer mem.Close()
	sc := bufio.NewScanner(maps)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || !strings.HasPrefix(f[1], "rw") {
			continue
		}
		lo, hi, _ := strings.Cut(f[0], "-")
		a, _ := strconv.ParseUint(lo, 16, 64)
		b, _ := strconv.ParseUint(hi, 16, 64)
		if b-a > 1<<30 {
			continue
		}
		buf := make([]byte, b-a)
		n, _ := mem.ReadAt(buf, int64(a))
		if bytes.Contains(buf[:n], needle) {
			return true
		}
	}
	return false
}

// TestTransportPluginHoldsNoToken: the Slack cockpit runs out of process in
// its sandbox, reaches the stand-in through its proxy (which puts the
// tokens in: the stand-in answers only the real ones), and the tokens are
// in none of its processes' environment (/proc/PID/environ) or writable
// memory, nor in any file under the Kule home but the sealed secrets store.
// With the guard off (the plugin handed the tokens themselves) the same
// look finds them in its environment: the test sees what it looks for.
func TestTransportPluginHoldsNoToken(t *testing.T) {
	home, tc, srv := slackHome(t)
	for _, guard := range []bool{true, false} {
		t.Run(fmt.Sprintf("guard=%v", guard), func(t *testing.T) {
			plugins := pluginHost(home)
			defer plugins.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			before := srv.Conns()
			r, err := kernel.StartTransport(ctx, home, kernel.TransportLaunch{Settings: tc, Hosts: transportHosts["slack"], Plugins: plugins, HandTokens: !guard})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			// Handed the real tokens, the plugin does not get through (the
			// proxy refuses a credential it does not hold for the host): only
			// the guarded plugin is waited for.
			for guard && srv.Conns() == before {
				if ctx.Err() != nil {
					t.Fatalf("the plugin never connected to the stand-in through its proxy; its network: %+v", r.Network())
				}
				time.Sleep(20 * time.Millisecond) // polling; the deadline only ends a broken run
			}
			if guard {
				if _, err := r.Deliver(ctx, transport.Event{ID: "e1", Notice: &transport.Notice{Text: "through the proxy"}}, ""); err != nil {
					t.Fatalf("deliver through the plugin: %v", err)
				}
			}
			if r.PID() == 0 {
				t.Fatal("no pid of the plugin's sandbox")
			}
			var seen, inEnv, inMem bool
			for _, pid := range descendants(r.PID()) {
				env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
				if err != nil {
					continue
				}
				if bytes.Contains(env, []byte(transport.ConfigEnv+"=")) {
					seen = true // the plugin itself
					if guard && inMemory(t, pid, []byte(pluginBotToken)) {
						inMem = true
					}
				}
				if bytes.Contains(env, []byte(pluginBotToken)) || bytes.Contains(env, []byte(pluginAppToken)) {
					inEnv = true
				}
			}
			if !seen {
				t.Fatalf("no process under the sandbox (pid %d) has the plugin's environment", r.PID())
			}
			if guard && (inEnv || inMem) {
				t.Fatalf("the plugin holds a token: in its environment %v, in its memory %v", inEnv, inMem)
			}
			if !guard && !inEnv {
				t.Fatal("with the guard off the token is not found in the plugin's environment either: the test shows nothing")
			}
			if guard {
				noTokenIn(t, home, filepath.Join(home, "secrets"))
			}
			if ps := srv.Posts(); guard && (len(ps) == 0 || srv.Violations() != 0) {
				t.Fatalf("posts %+v, violations %d", ps, srv.Violations())
			}
		})
	}
}

// TestDiscordPluginIdentifiesThroughProxy: the Discord cockpit, out of
// process, opens the gateway through its proxy; its identify frame carries
// the placeholder, and the proxy puts the bot token into d.token, so the
// stand-in (which accepts only the real token) sends READY. The proxy's
// log names the upgrade and the secret it placed.
func TestDiscordPluginIdentifiesThroughProxy(t *testing.T) {
	home := t.TempDir()
	t.Setenv("KULE_HOME", home)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "") // the key file
	const token = "discord-plugin-test-token-4242"
	srv := discordtest.Start(token)
	t.Cleanup(srv.Close)
	st, err := kernel.OpenSecrets(home)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Add("KULE_TRANSPORT_DISCORD_BOT", token, transportHosts["discord"]); err != nil {
		t.Fatal(err)
	}
	tc := kernel.TransportSettings{Name: "discord", Channel: "100", Operators: []string{"200"}, BotSecret: "KULE_TRANSPORT_DISCORD_BOT", API: srv.API}
	plugins := pluginHost(home)
	defer plugins.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := kernel.StartTransport(ctx, home, kernel.TransportLaunch{Settings: tc, Hosts: transportHosts["discord"], Plugins: plugins})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for srv.Conns() == 0 {
		if ctx.Err() != nil {
			t.Fatalf("no gateway session; identified with %q; the proxy logged %+v", srv.Identified(), r.Network())
		}
		time.Sleep(20 * time.Millisecond) // polling; the deadline only ends a broken run
	}
	for _, id := range srv.Identified() {
		if strings.Contains(id, "kule-secret-") {
			t.Fatalf("the gateway saw a placeholder: %q", id)
		}
	}
	if err := srv.Message("200", "100", "g1", "hello from discord", "m1", ""); err != nil {
		t.Fatal(err)
	}
	b, err := r.Receive(ctx, "", 30000)
	if err != nil || len(b.Incoming) == 0 || b.Incoming[0].Text != "hello from discord" {
		t.Fatalf("receive through the plugin: %+v, %v", b, err)
	}
	for _, pid := range descendants(r.PID()) {
		if env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); err == nil && bytes.Contains(env, []byte(token)) {
			t.Fatalf("process %d of the plugin holds the token in its environment", pid)
		}
	}
}

// holdsPlaceholdersOnly fails t unless a process under r's sandbox has the
// plugin's settings (transport.ConfigEnv) and none of them holds any of
// tokens in its environment, nor the plugin in its writable memory.
func holdsPlaceholdersOnly(t *testing.T, r *kernel.RunningTransport, tokens ...string) {
	t.Helper()
	if r.PID() == 0 {
		t.Fatal("no pid of the plugin's sandbox")
	}
	seen := false
	for _, pid := range descendants(r.PID()) {
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil {
			continue
		}
		plugin := bytes.Contains(env, []byte(transport.ConfigEnv+"="))
		seen = seen || plugin
		for _, tok := range tokens {
			if bytes.Contains(env, []byte(tok)) {
				t.Errorf("process %d of the plugin holds a token in its environment", pid)
			}
			if plugin && inMemory(t, pid, []byte(tok)) {
				t.Errorf("the plugin (process %d) holds a token in its memory", pid)
			}
		}
		if plugin && !bytes.Contains(env, []byte("kule-secret-")) {
			t.Errorf("the plugin (process %d) has no placeholder in its settings", pid)
		}
	}
	if !seen {
		t.Fatalf("no process under the sandbox (pid %d) has the plugin's settings", r.PID())
	}
}

// pluginPID is the pid of the transport plugin itself under the sandbox.
func pluginPID(t *testing.T, r *kernel.RunningTransport) int {
	t.Helper()
	for _, pid := range descendants(r.PID()) {
		if env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); err == nil && bytes.Contains(env, []byte(transport.ConfigEnv+"=")) {
			return pid
		}
	}
	t.Fatalf("no plugin process under the sandbox %d", r.PID())
	return 0
}

// TestTransportPluginStartsAgainAfterCrash: the plugin's process killed,
// the next call starts it again (in its sandbox, behind the same proxy)
// and the cockpit posts again.
func TestTransportPluginStartsAgainAfterCrash(t *testing.T) {
	home, tc, srv := slackHome(t)
	plugins := pluginHost(home)
	defer plugins.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := kernel.StartTransport(ctx, home, kernel.TransportLaunch{Settings: tc, Hosts: transportHosts["slack"], Plugins: plugins})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	first := pluginPID(t, r)
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for {
		_, err := r.Deliver(ctx, transport.Event{ID: "after", Notice: &transport.Notice{Text: "after the crash"}}, "")
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the cockpit never posted again: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // polling; the deadline only ends a broken run
	}
	if again := pluginPID(t, r); again == first {
		t.Fatalf("the plugin's process is still %d", first)
	}
	found := false
	for _, p := range srv.Posts() {
		found = found || p.Text == "after the crash"
	}
	if !found {
		t.Fatalf("the stand-in got %+v", srv.Posts())
	}
}
