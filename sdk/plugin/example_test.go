package plugin_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/kulehq/kule/sdk/differ"
	"github.com/kulehq/kule/sdk/plugin"
)

// keys names the "key = value" lines of a .conf file.
type keys struct{}

func (keys) Name() string             { return "keys" }
func (keys) Accepts(path string) bool { return strings.HasSuffix(path, ".conf") }
func (keys) Entities(_ context.Context, req differ.EntitiesRequest) (differ.EntitiesResponse, error) {
	var out []differ.Entity
	off := 0
	for _, line := range strings.SplitAfter(string(req.Content), "\n") {
		if k, _, ok := strings.Cut(line, "="); ok {
			out = append(out, differ.Entity{Kind: "key", Name: strings.TrimSpace(k), Start: off, End: off + len(line)})
		}
		off += len(line)
	}
	return differ.EntitiesResponse{Entities: out}, nil
}

// A plugin's main serves its differ; Kule starts the executable and talks to
// it over gRPC.
func ExampleServeDiffer() {
	// In the plugin's package main:
	//
	//	func main() { plugin.ServeDiffer(keys{}) }
	//
	// Run by hand, without Kule's handshake, it says it is a plugin and exits.
	_ = plugin.ServeDiffer
}

// The kernel's side of the wire: a DifferClient asks a served differ for
// names. Here both ends run in this process over go-plugin's test connection.
func ExampleDifferClient() {
	client, server := goplugin.TestPluginGRPCConn(new(testing.T), false, map[string]goplugin.Plugin{
		plugin.KindDiffer: &plugin.DifferPlugin{Impl: keys{}},
	})
	defer client.Close()
	defer server.Stop()
	raw, _ := client.Dispense(plugin.KindDiffer)
	c := raw.(*plugin.DifferClient)

	ctx := context.Background()
	info, _ := c.Info(ctx)
	fmt.Println(info.Name, "merge:", info.Has(plugin.CapMerge))
	r, _ := c.Entities(ctx, differ.EntitiesRequest{Path: "app.conf", Content: []byte("port = 80\nhost = example\n")})
	for _, e := range r.Entities {
		fmt.Println(e.ID(), e.Start, e.End)
	}
	_, err := c.Merge(ctx, differ.MergeRequest{Path: "app.conf"})
	fmt.Println(err)
	// Output:
	// keys merge: false
	// key port 0 10
	// key host 10 25
	// plugin: merge: plugin: optional method not implemented by the plugin
}
