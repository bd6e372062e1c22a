package daemon

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/kulehq/kule/kernel"
)

// proxyConnect asks the task's proxy (HTTPS_PROXY) to open hostport and says what it
// answered: the scripted agent's way of reaching for a host.
func proxyConnect(hostport string) string {
	u, err := url.Parse(os.Getenv("HTTPS_PROXY"))
	if err != nil || u.Host == "" {
		return fmt.Sprintf("no proxy (%q)", os.Getenv("HTTPS_PROXY"))
	}
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		return "dial: " + err.Error()
	}
	defer c.Close()
	auth := ""
	if pw, ok := u.User.Password(); ok {
		auth = "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pw)) + "\r\n"
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", hostport, hostport, auth)
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "read: " + err.Error()
	}
	return strings.TrimSpace(line)
}

// trialDaemon is a daemon whose approved agent "peer" reaches for the hosts given.
func trialDaemon(t *testing.T, hosts string) *Daemon {
	t.Helper()
	cfg := Config{Kernel: newKernel(t)}
	withPeerScript(t, &cfg, "reach", hosts)
	return startDaemon(t, cfg)
}

func peerProfile(t *testing.T, d *Daemon) kernel.AgentProfile {
	t.Helper()
	set, err := d.cfg.AgentSet()
	must(t, err)
	p, err := set.Get("peer")
	must(t, err)
	return p
}

// TestTrialFromSettings: POST /api/agents/peer/try runs the trial in the daemon and lists
// the hosts the agent reached, the refused HTTPS ones keepable; the trial's task is gone
// after it. Keeping one host adds exactly it to the profile, which then waits for approval.
func TestTrialFromSettings(t *testing.T) {
	d := trialDaemon(t, "model.test:443 other.test:443 plain.test:80")
	before, err := d.k.Store().List()
	must(t, err)
	code, body := call(t, d, http.MethodPost, "/api/agents/peer/try", "")
	if code != 200 {
		t.Fatalf("try: %d %s", code, body)
	}
	var v TrialView
	must(t, json.Unmarshal([]byte(body), &v))
	if v.Error != "" || v.StopReason != "end_turn" || !v.Personal || v.ID == "" {
		t.Fatalf("the trial: %+v", v)
	}
	keepable := map[string]bool{}
	for _, h := range v.Hosts {
		keepable[fmt.Sprintf("%s:%d", h.Host.Host, h.Port)] = h.CanKeep
	}
	if len(keepable) != 3 || !keepable["model.test:443"] || !keepable["other.test:443"] || keepable["plain.test:80"] {
		t.Fatalf("hosts and whether each can be kept: %v (%s)", keepable, body)
	}
	if after, _ := d.k.Store().List(); len(after) != len(before) {
		t.Fatalf("the trial left a task: %d tasks before, %d after", len(before), len(after))
	}

	code, body = call(t, d, http.MethodPost, "/api/agents/peer/hosts", `{"trial":"`+v.ID+`","hosts":["model.test"]}`)
	if code != 200 || !strings.Contains(body, `"added":["model.test"]`) {
		t.Fatalf("keep model.test: %d %s", code, body)
	}
	p := peerProfile(t, d)
	if !slices.Equal(p.Hosts, []string{"model.test"}) {
		t.Fatalf("the profile's hosts: %v, want exactly the ticked one", p.Hosts)
	}
	if kernel.CheckAgentApproved(d.home, p) == nil {
		t.Fatal("keeping a trial's hosts approved the changed profile")
	}
	if code, body := call(t, d, http.MethodPost, "/api/agents/peer/hosts", `{"trial":"`+v.ID+`","hosts":[]}`); code != http.StatusBadRequest || !strings.Contains(body, "nothing was changed") {
		t.Fatalf("keep nothing: %d %s", code, body)
	}
}

// TestTrialKeepsOnlyItsHosts: Keep adds only hosts the agent's last trial was refused. A
// request naming another host, or another trial, changes nothing; with the guard off the same
// request puts a host the agent never asked for into its profile.
func TestTrialKeepsOnlyItsHosts(t *testing.T) {
	d := trialDaemon(t, "model.test:443")
	code, body := call(t, d, http.MethodPost, "/api/agents/peer/try", "")
	if code != 200 {
		t.Fatalf("try: %d %s", code, body)
	}
	var v TrialView
	must(t, json.Unmarshal([]byte(body), &v))
	agentsToml := readFile(d.k.AgentsFile())
	planted := `{"trial":"` + v.ID + `","hosts":["model.test","exfil.example"]}`
	if code, body := call(t, d, http.MethodPost, "/api/agents/peer/hosts", planted); code != http.StatusBadRequest || !strings.Contains(body, "exfil.example") {
		t.Fatalf("a host the trial was not refused: %d %s, want 400", code, body)
	}
	if code, body := call(t, d, http.MethodPost, "/api/agents/peer/hosts", `{"trial":"not-it","hosts":["model.test"]}`); code != http.StatusConflict {
		t.Fatalf("another trial's id: %d %s, want 409", code, body)
	}
	if got := readFile(d.k.AgentsFile()); got != agentsToml {
		t.Fatalf("a refused Keep changed agents.toml:\n%s", got)
	}
	t.Run("without the guard", func(t *testing.T) {
		checkTrialHosts = false
		defer func() { checkTrialHosts = true }()
		if code, body := call(t, d, http.MethodPost, "/api/agents/peer/hosts", planted); code != 200 {
			t.Fatalf("with the guard off the host should be kept (the attack works): %d %s", code, body)
		}
		if p := peerProfile(t, d); !slices.Contains(p.Hosts, "exfil.example") {
			t.Fatalf("with the guard off the planted host should be in the profile: %v", p.Hosts)
		}
	})
}
