package differtest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/kulehq/kule/sdk/differ"
	"github.com/kulehq/kule/sdk/plugin"
)

// Run runs the whole conformance suite on d with the given real samples (at
// least one; each sample's Path must be accepted by d). Sub-tests:
//
//   - name: Name is non-empty and does not change;
//   - samples: each sample reads cleanly (Check) and names something;
//   - garbage: Garbage inputs never panic or hang and give valid entities;
//   - merge (a Merger only): the identities of CheckMerge on every sample;
//   - wire: the same entities come back through the plugin protocol.
func Run(t *testing.T, d differ.Differ, samples ...Sample) {
	t.Helper()
	if len(samples) == 0 {
		t.Fatalf("differtest: give at least one sample file")
	}
	t.Run("name", func(t *testing.T) {
		// Asked twice, the name must not change: the host keys plugins by it.
		first, again := d.Name(), d.Name()
		if first == "" || again != first {
			t.Errorf("differ name %q then %q: want a fixed, non-empty name", first, again)
		}
	})
	t.Run("samples", func(t *testing.T) {
		for _, s := range samples {
			if !d.Accepts(s.Path) {
				t.Errorf("%s: Accepts = false for a sample", s.Path)
			}
			if err := Check(d, s.Path, s.Src); err != nil {
				t.Errorf("%s: %v", s.Path, err)
				continue
			}
			r, err := d.Entities(context.Background(), differ.EntitiesRequest{Path: s.Path, Content: s.Src})
			if err != nil {
				t.Errorf("%s: a real sample does not read: %v", s.Path, err)
			} else if len(r.Entities) == 0 {
				t.Errorf("%s: no entities named in a real sample", s.Path)
			}
		}
	})
	t.Run("garbage", func(t *testing.T) {
		for i, g := range Garbage(1, samples) {
			if err := Check(d, samples[i%len(samples)].Path, g); err != nil {
				t.Errorf("garbage input %d (%d bytes): %v", i, len(g), err)
			}
		}
	})
	if m, ok := d.(differ.Merger); ok {
		t.Run("merge", func(t *testing.T) {
			for i, s := range samples {
				other := samples[(i+1)%len(samples)].Src
				if err := CheckMerge(m, s.Path, s.Src, other); err != nil {
					t.Errorf("%s: %v", s.Path, err)
				}
			}
		})
	}
	t.Run("wire", func(t *testing.T) {
		checkWire(t, d, samples)
	})
}

// checkWire serves d over an in-process gRPC connection, as the host would
// reach it in its own process, and compares every answer with a direct call.
func checkWire(t *testing.T, d differ.Differ, samples []Sample) {
	client, server := goplugin.TestPluginGRPCConn(t, false, map[string]goplugin.Plugin{
		plugin.KindDiffer: &plugin.DifferPlugin{Impl: d},
	})
	defer client.Close()
	defer server.Stop()
	raw, err := client.Dispense(plugin.KindDiffer)
	if err != nil {
		t.Fatalf("dispense differ: %v", err)
	}
	c := raw.(*plugin.DifferClient)
	ctx := context.Background()
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatalf("info over the wire: %v", err)
	}
	_, isMerger := d.(differ.Merger)
	if info.Name != d.Name() || info.Has(plugin.CapMerge) != isMerger {
		t.Errorf("info over the wire = %+v, want name %q, merge %v", info, d.Name(), isMerger)
	}
	for _, s := range samples {
		ok, err := c.Accepts(ctx, s.Path)
		if err != nil || ok != d.Accepts(s.Path) {
			t.Errorf("%s: accepts over the wire = %v, %v", s.Path, ok, err)
		}
		req := differ.EntitiesRequest{Path: s.Path, Content: s.Src}
		wantR, werr := d.Entities(ctx, req)
		gotR, gerr := c.Entities(ctx, req)
		want, got := wantR.Entities, gotR.Entities
		if (werr == nil) != (gerr == nil) {
			t.Errorf("%s: entities over the wire: error %v, direct error %v", s.Path, gerr, werr)
			continue
		}
		if len(want) == 0 && len(got) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: entities over the wire differ from a direct call:\n got %s\nwant %s", s.Path, fmt.Sprint(got), fmt.Sprint(want))
		}
	}
	if !isMerger {
		if _, err := c.Merge(ctx, differ.MergeRequest{Path: samples[0].Path}); !errors.Is(err, plugin.ErrUnimplemented) {
			t.Errorf("merge over the wire of a differ without Merger: want ErrUnimplemented, got %v", err)
		}
	}
}
