package pluginserve

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/gorilla/websocket"

	"github.com/kulehq/kule/plugins/transport/discord"
	"github.com/kulehq/kule/plugins/transport/slack"
	sdkplugin "github.com/kulehq/kule/sdk/plugin"
	"github.com/kulehq/kule/sdk/transport"
)

// serveTransport is `kule-plugins __plugin transport/<name>`, inside the plugin
// sandbox: it reads its settings (placeholders, never tokens) from the
// environment, sends everything through the proxy the sandbox forwards to
// (also to a stand-in on loopback, which the proxy judges like any host),
// trusts the proxy's run authority beside the system's roots, connects to
// the service and serves the transport to the daemon.
func serveTransport(name string) int {
	cfg, err := transport.PluginConfigFromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kule-plugins __plugin transport/"+name+":", err)
		return 2
	}
	pu, err := url.Parse(os.Getenv("HTTPS_PROXY"))
	if err != nil || pu.Host == "" {
		fmt.Fprintln(os.Stderr, "kule-plugins __plugin transport/"+name+": no proxy in the environment (HTTPS_PROXY)")
		return 2
	}
	viaProxy := http.ProxyURL(pu) // NO_PROXY is not honoured: there is no other way out
	roots, err := x509.SystemCertPool()
	if err != nil || roots == nil {
		roots = x509.NewCertPool()
	}
	roots.AppendCertsFromPEM([]byte(cfg.CA))
	tc := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if ht, ok := http.DefaultTransport.(*http.Transport); ok {
		ht.Proxy, ht.TLSClientConfig = viaProxy, tc
	}
	websocket.DefaultDialer.Proxy, websocket.DefaultDialer.TLSClientConfig = viaProxy, tc
	log := sdkplugin.Logger("transport-" + name)
	ctx := context.Background()
	switch name {
	case "slack":
		s, err := slack.New(slack.Config{APIURL: cfg.API, BotToken: cfg.Bot, AppToken: cfg.App, Channel: cfg.Channel, Log: log,
			Dialer: &websocket.Dialer{Proxy: viaProxy, TLSClientConfig: tc, HandshakeTimeout: 30 * time.Second}})
		if err != nil {
			fmt.Fprintln(os.Stderr, "kule-plugins __plugin transport/slack:", err)
			return 2
		}
		go s.Run(ctx)
		sdkplugin.ServeTransport(s, name)
	case "discord":
		d, err := discord.New(discord.Config{API: cfg.API, Token: cfg.Bot, Channel: cfg.Channel, Log: log})
		if err != nil {
			fmt.Fprintln(os.Stderr, "kule-plugins __plugin transport/discord:", err)
			return 2
		}
		go func() {
			// discordgo reconnects a session it opened; one that never
			// opened is tried again, waiting longer each time.
			for fails := 1; ; fails++ {
				err := d.Run(ctx)
				log.Warn("gateway session ended", "err", err, "attempt", fails)
				time.Sleep(min(time.Duration(fails)*time.Second, 30*time.Second))
			}
		}()
		sdkplugin.ServeTransport(d, name)
	default:
		fmt.Fprintf(os.Stderr, "kule-plugins __plugin: no built-in transport %q\n", name)
		return 2
	}
	return 0
}
