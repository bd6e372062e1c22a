// Command kule-example-transport is an example third-party Kule transport
// (see package chat): build it, write its sha256 into plugin.toml (build.sh
// does both), then `kule plugins install DIR`, `kule plugins approve
// example-chat` and `kule transport add example-chat`.
//
// Kule starts it in a sandbox whose only way out is a proxy of its own.
// Its settings come in transport.ConfigEnv: the channel, the API address,
// a placeholder for the bot's token, and the proxy's certificate authority,
// which the plugin trusts beside the system's roots.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"time"

	"example.com/kule-example-transport/chat"
	"github.com/kulehq/kule/sdk/plugin"
	"github.com/kulehq/kule/sdk/transport"
)

func main() {
	cfg, err := transport.PluginConfigFromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kule-example-transport:", err)
		os.Exit(2)
	}
	// Everything goes through the proxy, a service on this machine too:
	// http.ProxyFromEnvironment would skip it for loopback addresses, and
	// there is no other way out of the sandbox.
	proxy, err := url.Parse(os.Getenv("HTTPS_PROXY"))
	if err != nil || proxy.Host == "" {
		fmt.Fprintln(os.Stderr, "kule-example-transport: no proxy in the environment (HTTPS_PROXY)")
		os.Exit(2)
	}
	roots, err := x509.SystemCertPool()
	if err != nil || roots == nil {
		roots = x509.NewCertPool()
	}
	roots.AppendCertsFromPEM([]byte(cfg.CA))
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		Proxy:           http.ProxyURL(proxy),
		TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
	}}
	c, err := chat.New(chat.Config{API: cfg.API, Token: cfg.Bot, Channel: cfg.Channel, Client: client})
	if err != nil {
		fmt.Fprintln(os.Stderr, "kule-example-transport:", err)
		os.Exit(2)
	}
	plugin.ServeTransport(c, "example-chat")
}
