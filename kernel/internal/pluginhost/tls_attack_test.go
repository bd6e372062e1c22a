package pluginhost

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	sdkplugin "github.com/kulehq/kule/sdk/plugin"
	"github.com/kulehq/kule/sdk/plugintls"
)

// serveAttacker serves the fake plugins that attack the handshake:
// "impostor" announces one certificate and answers with another, pinned to
// the host (a process answering in the plugin's place, with a key of its
// own), and "unpinned" is an honest plugin with its pin taken away, taking
// any caller (the guard removed, for the caller attack to show working).
func serveAttacker(mode string, cfg *goplugin.ServeConfig) {
	hostPEM := os.Getenv(plugintls.EnvVar)
	announced, err := plugintls.NewPlugin(hostPEM)
	if err != nil {
		panic(err)
	}
	tc := announced.Config()
	if mode == "impostor" {
		other, err := plugintls.NewPlugin(hostPEM)
		if err != nil {
			panic(err)
		}
		tc = other.Config()
	} else {
		tc.VerifyConnection = nil
		tc.ClientAuth = tls.RequestClientCert
	}
	cfg.TLSProvider = func() (*tls.Config, error) { return tc, nil }
	announced.Serve(cfg)
}

// TestHostRefusesAPluginPresentingAnotherCertificate: whatever answers on
// the plugin's socket must hold the key made for this start; a certificate
// of its own is refused. With the host's pin taken away it is believed.
func TestHostRefusesAPluginPresentingAnotherCertificate(t *testing.T) {
	ctx := context.Background()
	h := newHost(t)
	install(t, h, "impostor")
	_, err := h.get(ctx, "differ", "impostor", false)
	if err == nil {
		t.Fatal("the host started and talked to a plugin presenting another certificate")
	}
	if !strings.Contains(err.Error(), "other than the one it announced") {
		t.Errorf("refused, but the error does not say why: %v", err)
	}

	h.unpinned = true
	h.opts.MaxStarts = 10
	p, err := h.get(ctx, "differ", "impostor", false)
	if err != nil {
		t.Fatalf("pin taken away: the impostor was still refused, so the test proves nothing: %v", err)
	}
	h.drop(p)
}

// TestPluginRefusesACallerWithoutTheHostsCertificate: another process that
// finds the plugin's socket and dials it with a key of its own gets no
// answer; with the plugin's pin taken away it does.
func TestPluginRefusesACallerWithoutTheHostsCertificate(t *testing.T) {
	ctx := context.Background()
	h := newHost(t)
	install(t, h, "good")
	install(t, h, "unpinned")
	for mode, wantRefused := range map[string]bool{"good": true, "unpinned": false} {
		p, err := h.get(ctx, "differ", mode, false)
		if err != nil {
			t.Fatalf("%s: the host's own start failed: %v", mode, err)
		}
		_, err = callAsStranger(t, p.client.ReattachConfig().Addr)
		switch {
		case wantRefused && err == nil:
			t.Errorf("%s: a caller without the host's certificate called the plugin", mode)
		case !wantRefused && err != nil:
			t.Errorf("%s (pin taken away): the stranger's call failed, so the test proves nothing: %v", mode, err)
		}
		// The host's own connection is unaffected.
		if _, err := p.differ.Info(ctx); err != nil {
			t.Errorf("%s: the host's own call after the attack: %v", mode, err)
		}
	}
}

// callAsStranger calls Info on the plugin listening at addr with a key pair
// of its own, accepting whatever certificate the plugin presents.
func callAsStranger(t *testing.T, addr net.Addr) (sdkplugin.Info, error) {
	t.Helper()
	stranger, err := plugintls.NewHost()
	if err != nil {
		t.Fatal(err)
	}
	cfg := stranger.ClientConfig()
	cfg.VerifyConnection = nil
	conn, err := grpc.NewClient("passthrough:///plugin",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, addr.Network(), addr.String())
		}),
		grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	raw, err := (&sdkplugin.DifferPlugin{}).GRPCClient(context.Background(), nil, conn)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return raw.(*sdkplugin.DifferClient).Info(ctx)
}

// TestPluginOfAnOlderSDKStillStarts: a plugin built before sdk/plugintls
// does go-plugin's AutoMTLS itself (a P-521 key of its own, announced on
// its handshake line); the host's side of the same protocol accepts it.
func TestPluginOfAnOlderSDKStillStarts(t *testing.T) {
	ctx := context.Background()
	h := newHost(t)
	install(t, h, "legacy")
	p, err := h.get(ctx, "differ", "legacy", false)
	if err != nil {
		t.Fatalf("a plugin of an older sdk did not start: %v", err)
	}
	if p.info.Name != "legacy" {
		t.Errorf("Info = %+v", p.info)
	}
}
