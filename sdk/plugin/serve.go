package plugin

import (
	"fmt"
	"os"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/kulehq/kule/sdk/differ"
	"github.com/kulehq/kule/sdk/plugintls"
	"github.com/kulehq/kule/sdk/previewer"
)

// ServeDiffer serves d as a differ plugin on the process's stdio and does not
// return until the host ends the plugin. Call it from the plugin's main.
//
// Started by hand (without Kule's magic cookie) it says so and exits 1.
// The differ's Merger, if it has one, is found by type assertion and
// announced to the host; without it Merge answers codes.Unimplemented.
func ServeDiffer(d differ.Differ) {
	hs, _ := Handshake(KindDiffer)
	plugintls.Serve(DifferServeConfig(d, hs))
}

// DifferServeConfig is the go-plugin ServeConfig ServeDiffer uses; exposed so
// tests can serve with a different handshake (go-plugin's own test helpers).
func DifferServeConfig(d differ.Differ, hs goplugin.HandshakeConfig) *goplugin.ServeConfig {
	return &goplugin.ServeConfig{
		HandshakeConfig: hs,
		VersionedPlugins: map[int]goplugin.PluginSet{
			int(hs.ProtocolVersion): {KindDiffer: &DifferPlugin{Impl: d}},
		},
		GRPCServer: goplugin.DefaultGRPCServer,
		Logger:     Logger(fmt.Sprintf("differ-%s", d.Name())),
	}
}

// Logger is the logger a plugin should log through: JSON lines on stderr,
// which the host re-levels under the plugin's name in Kule's own log.
func Logger(name string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       name,
		Level:      hclog.Trace,
		Output:     os.Stderr,
		JSONFormat: true,
	})
}

// ServePreviewer serves p as a previewer plugin on the process's stdio and
// does not return until the host ends the plugin. Call it from the plugin's
// main.
func ServePreviewer(p previewer.Previewer) {
	hs, _ := Handshake(KindPreviewer)
	plugintls.Serve(PreviewerServeConfig(p, hs))
}

// PreviewerServeConfig is the go-plugin ServeConfig ServePreviewer uses.
func PreviewerServeConfig(p previewer.Previewer, hs goplugin.HandshakeConfig) *goplugin.ServeConfig {
	return &goplugin.ServeConfig{
		HandshakeConfig: hs,
		VersionedPlugins: map[int]goplugin.PluginSet{
			int(hs.ProtocolVersion): {KindPreviewer: &PreviewerPlugin{Impl: p}},
		},
		GRPCServer: previewerGRPCServer,
		Logger:     Logger(fmt.Sprintf("previewer-%s", p.Name())),
	}
}

// previewerGRPCServer is go-plugin's server taking messages of up to
// previewer.MaxMessage: gRPC's default of 4 MiB would refuse any request
// for a file larger than that.
func previewerGRPCServer(opts []grpc.ServerOption) *grpc.Server {
	return goplugin.DefaultGRPCServer(append(opts,
		grpc.MaxRecvMsgSize(previewer.MaxMessage), grpc.MaxSendMsgSize(previewer.MaxMessage)))
}
