package kernel

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/kulehq/kule/kernel/internal/config"
	"github.com/kulehq/kule/kernel/internal/pluginhost"
	"github.com/kulehq/kule/kernel/internal/proxy"
	"github.com/kulehq/kule/kernel/internal/secrets"
	sdkplugin "github.com/kulehq/kule/sdk/plugin"
	"github.com/kulehq/kule/sdk/transport"
)

// A chat transport runs out of process, as the built-in plugin
// `kule-plugins __plugin transport/<name>` or an installed transport plugin's
// approved executable, in the plugin sandbox's transport profile: its
// network namespace reaches only a proxy of its own, which lets it reach
// the chat service's hosts (and their subdomains) and nothing else, and
// logs each connection to $KULE_HOME/transports/<name>-network.jsonl.
// The plugin is given placeholders for the bot's tokens; the proxy, which
// alone reads them from the secrets store, puts each into requests to the
// service's hosts:
//
//   - in credential headers (Slack's Web API and apps.connections.open,
//     Discord's REST), as for a task's secrets;
//   - in one WebSocket frame field, "d.token" of Discord's identify and
//     resume on its gateway (proxy.Secret.FramePaths), nowhere else.
//
// So the tokens are in the memory of the kule process that runs the proxy,
// never in the plugin's environment, memory or files, nor in any task's.

// Errors of starting a transport.
var (
	ErrTransportStart = errors.New("transport did not start")
)

// TransportLaunch is what StartTransport needs.
type TransportLaunch struct {
	Settings TransportSettings
	// Hosts are the chat service's hosts ("slack.com"): the tokens are sent
	// to these exact hosts only, and the plugin reaches these and their
	// subdomains only. An API address in Settings is added, named (a
	// stand-in on this machine is reached because config.toml names it).
	Hosts   []string
	Plugins *PluginHost
	Log     hclog.Logger
	// Installed starts the third-party transport plugin installed as
	// Settings.Name (kule plugins install), approved by exact version and
	// checked against its approval at every start. Its hosts are the
	// network permissions of its manifest (Hosts is left empty), and its
	// tokens go only to those of them the kept secrets were kept for.
	Installed bool
	// HandTokens gives the plugin the tokens themselves in place of their
	// placeholders. Tests only: it shows what the placeholders keep out.
	HandTokens bool
}

// RunningTransport is a transport plugin's process, its proxy, and the
// transport it serves. A plugin process that ended (a crash, a kill) is
// started again at the next call, maxTransportStarts times at most in its
// life; its proxy stays.
type RunningTransport struct {
	proxy  *proxy.Proxy
	launch func() (*pluginhost.Started, *sdkplugin.TransportClient, error)

	mu      sync.Mutex // held while a process is started
	started *pluginhost.Started
	client  *sdkplugin.TransportClient
	starts  int
	closed  bool

	pidMu sync.Mutex
	pid   int
}

// maxTransportStarts is how often a transport's process is started in one
// RunningTransport's life.
const maxTransportStarts = 5

var _ transport.Transport = (*RunningTransport)(nil)

// current is the running plugin's client, started again if it ended.
func (r *RunningTransport) current() (*sdkplugin.TransportClient, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, fmt.Errorf("%w: it was closed", ErrTransportStart)
	}
	if !r.started.Client.Exited() {
		return r.client, nil
	}
	if r.starts >= maxTransportStarts {
		return nil, fmt.Errorf("%w: its process ended %d times; it is not started again until the daemon restarts", ErrTransportStart, r.starts)
	}
	r.starts++
	st, c, err := r.launch()
	if err != nil {
		return nil, err
	}
	r.started, r.client = st, c
	return c, nil
}

// Info is the plugin's Info.
func (r *RunningTransport) Info(ctx context.Context) (transport.Info, error) {
	c, err := r.current()
	if err != nil {
		return transport.Info{}, err
	}
	return c.Info(ctx)
}

// Deliver is the plugin's Deliver.
func (r *RunningTransport) Deliver(ctx context.Context, ev transport.Event, replaces string) (transport.Delivered, error) {
	c, err := r.current()
	if err != nil {
		return transport.Delivered{}, err
	}
	return c.Deliver(ctx, ev, replaces)
}

// Receive is the plugin's Receive.
func (r *RunningTransport) Receive(ctx context.Context, cursor string, waitMillis int64) (transport.Batch, error) {
	c, err := r.current()
	if err != nil {
		return transport.Batch{}, err
	}
	return c.Receive(ctx, cursor, waitMillis)
}

// PID is the process id of the plugin's sandbox (the plugin is one of its
// descendants), 0 before it ran.
func (r *RunningTransport) PID() int {
	r.pidMu.Lock()
	defer r.pidMu.Unlock()
	return r.pid
}

// Network is what the plugin's proxy logged: one entry per connection.
func (r *RunningTransport) Network() []TransportConnection { return r.proxy.Entries() }

// TransportConnection is one line of a transport's network log. See [proxy.Entry].
type TransportConnection = proxy.Entry

// Close ends the plugin and its proxy.
func (r *RunningTransport) Close() {
	r.mu.Lock()
	r.closed = true
	st := r.started
	r.mu.Unlock()
	st.Kill()
	r.proxy.Close()
}

// systemBundles are where the system's CA bundle may be; the plugin may
// read the first that exists (its TLS to hosts the proxy only tunnels).
var systemBundles = []string{"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"}

// StartTransport starts the transport l.Settings.Name (built in, or
// installed and approved: l.Installed) out of process with its proxy, and
// returns it once its handshake is done.
//
// Lifecycle:
//  1. An installed transport's hosts are read from its manifest (its
//     approval is checked at step 3, at every start); the tokens are read
//     from the secrets store of home.
//  2. A proxy is started that allows only the service's hosts and holds the
//     tokens as secrets for them.
//  3. The plugin starts in its sandbox, with placeholders and the proxy's
//     run authority in its environment (transport.ConfigEnv).
//  4. Close ends both.
func StartTransport(ctx context.Context, home string, l TransportLaunch) (*RunningTransport, error) {
	tc := l.Settings
	fail := func(err error) error { return fmt.Errorf("%w: %s: %v", ErrTransportStart, tc.Name, err) }
	if l.Plugins == nil {
		return nil, fail(errors.New("no plugin host given"))
	}
	if l.Installed {
		if len(l.Hosts) > 0 {
			return nil, fail(errors.New("an installed transport's hosts are its manifest's, not the caller's"))
		}
		hosts, err := installedTransportHosts(l.Plugins, tc.Name)
		if err != nil {
			return nil, fail(err)
		}
		l.Hosts = hosts
	}
	if len(l.Hosts) == 0 {
		return nil, fail(errors.New("no hosts given"))
	}
	if l.Log == nil {
		l.Log = hclog.NewNullLogger()
	}
	st, err := secrets.Open(home)
	if err != nil {
		return nil, fail(err)
	}
	// Where the tokens may go: the service's exact hosts (an installed
	// transport's: those its kept secrets were kept for too, so a new
	// version's manifest cannot move them), and the API address config.toml
	// names, if any.
	tokenHosts := append([]string(nil), l.Hosts...)
	apiEndpoint := ""
	get := func(name string) (string, error) {
		if !config.IsTransportSecret(name) {
			return "", fmt.Errorf("the kept secret %s is not a transport's (its name must start with %s)", name, TransportSecretPrefix)
		}
		s, err := st.Get(name)
		if err != nil {
			return "", fmt.Errorf("the kept secret %s: %w (kule transport add %s keeps it)", name, err, tc.Name)
		}
		if l.Installed {
			tokenHosts = keptHostsOnly(tokenHosts, s.Hosts, apiEndpoint)
		}
		return s.Value, nil
	}
	apiHost, apiPort := "", 0
	if tc.API != "" {
		u, err := url.Parse(tc.API)
		if err != nil || u.Hostname() == "" {
			return nil, fail(fmt.Errorf("the api address %q is not a URL", tc.API))
		}
		apiHost = strings.ToLower(u.Hostname())
		apiPort = 443
		if u.Scheme == "http" {
			apiPort = 80
		}
		if p := u.Port(); p != "" {
			apiPort, _ = strconv.Atoi(p)
		}
		apiEndpoint = net.JoinHostPort(apiHost, strconv.Itoa(apiPort))
		tokenHosts = append(tokenHosts, apiEndpoint)
	}
	var kept []proxy.Secret
	bot, err := get(tc.BotSecret)
	if err != nil {
		return nil, fail(err)
	}
	app := ""
	if tc.AppSecret != "" {
		if app, err = get(tc.AppSecret); err != nil {
			return nil, fail(err)
		}
	}
	botSecret := proxy.Secret{Name: tc.BotSecret, Value: bot, Hosts: tokenHosts}
	if tc.Name == "discord" && !l.Installed {
		botSecret.FramePaths = []string{"d.token"} // the gateway's identify and resume
	}
	kept = append(kept, botSecret)
	if tc.AppSecret != "" {
		kept = append(kept, proxy.Secret{Name: tc.AppSecret, Value: app, Hosts: tokenHosts})
	}
	for i := range kept {
		kept[i].Placeholder = proxy.NewPlaceholder(kept[i].Name)
	}
	dir := filepath.Join(home, "transports")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fail(err)
	}
	var tok [16]byte
	_, _ = rand.Read(tok[:])
	pcfg := proxy.Config{
		Decide:     transportDecider(tc.Name, l.Hosts, apiHost, apiPort),
		LogPath:    filepath.Join(dir, tc.Name+"-network.jsonl"),
		Secrets:    kept,
		BundlePath: filepath.Join(dir, tc.Name+"-ca.pem"),
		Token:      hex.EncodeToString(tok[:]),
	}
	p, err := proxy.Start(ctx, pcfg)
	if err != nil {
		return nil, fail(err)
	}
	pc := transport.PluginConfig{Channel: tc.Channel, API: tc.API, Bot: kept[0].Placeholder, CA: string(p.CACertPEM())}
	if len(kept) > 1 {
		pc.App = kept[1].Placeholder
	}
	if l.HandTokens {
		pc.Bot, pc.App = bot, app
	}
	raw, err := json.Marshal(pc)
	if err != nil {
		p.Close()
		return nil, fail(err)
	}
	env := []string{transport.ConfigEnv + "=" + string(raw)}
	var reads []string
	for _, b := range systemBundles {
		if fi, err := os.Stat(b); err == nil && fi.Mode().IsRegular() {
			reads = append(reads, b)
			env = append(env, "SSL_CERT_FILE="+b)
			break
		}
	}
	r := &RunningTransport{proxy: p}
	hs, err := sdkplugin.Handshake(sdkplugin.KindTransport)
	if err != nil {
		p.Close()
		return nil, fail(err)
	}
	r.launch = func() (*pluginhost.Started, *sdkplugin.TransportClient, error) {
		start := l.Plugins.StartBuiltinWith
		if l.Installed {
			start = l.Plugins.StartInstalledWith
		}
		started, err := start(context.WithoutCancel(ctx), sdkplugin.KindTransport, tc.Name, hs,
			goplugin.PluginSet{sdkplugin.KindTransport: &sdkplugin.TransportPlugin{}},
			pluginhost.StartOptions{Env: env, ProxyAddr: p.Addr(), ProxyToken: pcfg.Token, Reads: reads, Started: func(pid int) {
				r.pidMu.Lock()
				r.pid = pid
				r.pidMu.Unlock()
			}})
		if err != nil {
			return nil, nil, fail(err)
		}
		client, ok := started.Raw.(*sdkplugin.TransportClient)
		if !ok {
			started.Kill()
			return nil, nil, fail(fmt.Errorf("the plugin served %T, not a transport", started.Raw))
		}
		return started, client, nil
	}
	r.starts = 1
	if r.started, r.client, err = r.launch(); err != nil {
		p.Close()
		return nil, err
	}
	return r, nil
}

// keptHostsOnly is hosts without those a kept secret was not kept for
// (keptFor), but the API address config.toml names (api): an installed
// transport's new version cannot send a token kept for its service's hosts
// to another host by naming it in its manifest.
func keptHostsOnly(hosts, keptFor []string, api string) []string {
	return slices.DeleteFunc(slices.Clone(hosts), func(h string) bool { return h != api && !slices.Contains(keptFor, h) })
}

// installedTransportHosts are the hosts the manifest of the installed
// transport name asks for. Nothing of the plugin runs here.
func installedTransportHosts(plugins *PluginHost, name string) ([]string, error) {
	st, err := plugins.Status(name)
	if err != nil {
		return nil, err
	}
	if st.Manifest.Kind != sdkplugin.KindTransport {
		return nil, fmt.Errorf("the installed plugin %s is a %s, not a transport", name, st.Manifest.Kind)
	}
	hosts := st.Manifest.NetworkHosts()
	if len(hosts) == 0 {
		return nil, fmt.Errorf("the manifest of %s names no hosts (permissions = [\"network:chat.example.com\"])", name)
	}
	return hosts, nil
}

// transportDecider lets a transport's plugin reach its service's hosts and
// their subdomains (a name ending in "."+host, never merely in host:
// "evilslack.com" is not Slack's), on the port a "host:port" entry names if
// it names one, and the API address config.toml names, on its port only, as
// a named endpoint (a stand-in on this machine).
func transportDecider(name string, hosts []string, apiHost string, apiPort int) proxy.Decider {
	rule := "transport-" + name
	return func(_ context.Context, host string, port int) proxy.Decision {
		if apiHost != "" && host == apiHost && port == apiPort {
			return proxy.Decision{Allow: true, Rule: rule, Named: true}
		}
		for _, h := range hosts {
			want := 0
			if hh, p, err := net.SplitHostPort(h); err == nil {
				h = hh
				if want, err = strconv.Atoi(p); err != nil {
					continue
				}
			}
			if (host == h || strings.HasSuffix(host, "."+h)) && (want == 0 || port == want) {
				return proxy.Decision{Allow: true, Rule: rule}
			}
		}
		return proxy.Decision{Rule: rule, Reason: "not a host of " + name}
	}
}
