package plugintls

import (
	"context"
	"crypto/tls"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// The plugin of these tests is this test binary run again: TestMain sees
// the handshake's cookie and serves through Serve, or through go-plugin's
// own Serve (an older sdk's AutoMTLS) when the cookie says "old".
var testHandshake = goplugin.HandshakeConfig{ProtocolVersion: 1, MagicCookieKey: "PLUGINTLS_TEST", MagicCookieValue: "new"}

// nothing is a gRPC plugin that serves nothing: go-plugin's health
// service, which Ping calls, is all the test needs.
type nothing struct {
	goplugin.NetRPCUnsupportedPlugin
}

func (nothing) GRPCServer(*goplugin.GRPCBroker, *grpc.Server) error { return nil }
func (nothing) GRPCClient(context.Context, *goplugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, nil
}

var plugins = goplugin.PluginSet{"nothing": nothing{}}

func TestMain(m *testing.M) {
	if v := os.Getenv(testHandshake.MagicCookieKey); v != "" {
		hs := testHandshake
		hs.MagicCookieValue = v
		cfg := &goplugin.ServeConfig{HandshakeConfig: hs, GRPCServer: goplugin.DefaultGRPCServer,
			Plugins: plugins, Logger: hclog.NewNullLogger()}
		switch v {
		case "old":
			goplugin.Serve(cfg)
		case "silent": // TLS with the host pinned, and no certificate announced
			p, err := NewPlugin(os.Getenv(EnvVar))
			if err != nil {
				panic(err)
			}
			c := p.Config()
			cfg.TLSProvider = func() (*tls.Config, error) { return c, nil }
			goplugin.Serve(cfg)
		default:
			Serve(cfg)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startPlugin starts this binary as a plugin with cookie, the host's side
// from NewHost (or go-plugin's AutoMTLS), and pings it over gRPC, which
// needs the TLS handshake done.
func startPlugin(t *testing.T, cookie string, autoMTLS bool) error {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	hs := testHandshake
	hs.MagicCookieValue = cookie
	cmd := exec.Command(self)
	cfg := &goplugin.ClientConfig{HandshakeConfig: hs, Plugins: plugins, Cmd: cmd,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC}, Logger: hclog.NewNullLogger(), AutoMTLS: autoMTLS}
	if !autoMTLS {
		h, err := NewHost()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Env = append(os.Environ(), h.Env()...)
		cfg.TLSConfig = h.ClientConfig()
	}
	c := goplugin.NewClient(cfg)
	defer c.Kill()
	rpc, err := c.Client()
	if err != nil {
		return err
	}
	return rpc.Ping()
}

// Serve announces the plugin's certificate on go-plugin's handshake line,
// so a host of this package, an older host (go-plugin's AutoMTLS) and an
// older plugin all talk.
func TestServePairsWithEverySide(t *testing.T) {
	for name, c := range map[string]struct {
		cookie   string
		autoMTLS bool
	}{
		"this package on both sides": {"new", false},
		"an older host":              {"new", true},
		"an older plugin":            {"old", false},
	} {
		if err := startPlugin(t, c.cookie, c.autoMTLS); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// A plugin that serves TLS but announces nothing is refused by the host.
func TestHostRefusesAPluginThatAnnouncedNothing(t *testing.T) {
	err := startPlugin(t, "silent", false)
	if err == nil || !strings.Contains(err.Error(), "announced no certificate") {
		t.Fatalf("a plugin that announced nothing: err %v", err)
	}
}
