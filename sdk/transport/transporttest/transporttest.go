// Package transporttest is the conformance kit of transport plugins: Run
// checks a transport against the contract of sdk/transport, directly and
// through the plugin's gRPC boundary, with the chat service (a local
// stand-in) producing what people write.
package transporttest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/kulehq/kule/sdk/plugin"
	"github.com/kulehq/kule/sdk/transport"
)

// Harness is a transport under test and its chat service.
type Harness struct {
	Transport transport.Transport
	// Channel is the channel the transport is configured for.
	Channel string
	// Write makes the chat service deliver in to the transport, as if a
	// person wrote it: a message (Thread "" for a top-level one), a slash
	// command (Command set) or a button press (Choice set).
	Write func(t *testing.T, in transport.Incoming)
}

// Run checks h's transport directly, then through gRPC.
func Run(t *testing.T, h Harness) {
	t.Run("direct", func(t *testing.T) { check(t, h, h.Transport) })
	t.Run("grpc", func(t *testing.T) {
		client, server := goplugin.TestPluginGRPCConn(t, false, map[string]goplugin.Plugin{plugin.KindTransport: &plugin.TransportPlugin{Impl: h.Transport}})
		defer client.Close()
		defer server.Stop()
		raw, err := client.Dispense(plugin.KindTransport)
		if err != nil {
			t.Fatal(err)
		}
		check(t, h, raw.(transport.Transport))
	})
}

func check(t *testing.T, h Harness, tr transport.Transport) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	info, err := tr.Info(ctx)
	if err != nil || info.Name == "" {
		t.Fatalf("Info = %+v, %v; want a name", info, err)
	}
	if _, err := tr.Deliver(ctx, transport.Event{ID: "empty"}, ""); err == nil {
		t.Error("Deliver took an event with no body")
	}
	top, err := tr.Deliver(ctx, transport.Event{ID: "n1", Notice: &transport.Notice{Text: "a task started"}}, "")
	if err != nil {
		t.Fatalf("Deliver top-level: %v", err)
	}
	if top.Ref == "" || top.Thread != top.Ref {
		t.Errorf("a top-level delivery = %+v: want a ref naming the thread it opens", top)
	}
	in, err := tr.Deliver(ctx, transport.Event{ID: "n2", Thread: top.Thread, Notice: &transport.Notice{Text: "in the thread"}}, "")
	if err != nil || in.Thread != top.Thread {
		t.Errorf("a delivery into thread %q = %+v, %v", top.Thread, in, err)
	}
	if info.Has(transport.CapButtons) {
		q, err := tr.Deliver(ctx, transport.Event{ID: "q1", Thread: top.Thread, Question: &transport.Question{Text: "Connect?", Choices: []string{"Approve", "Deny"}}}, "")
		if err != nil {
			t.Fatalf("Deliver a question: %v", err)
		}
		if info.Has(transport.CapEdit) {
			if _, err := tr.Deliver(ctx, transport.Event{ID: "q1", Thread: top.Thread, Notice: &transport.Notice{Text: "Approved"}}, q.Ref); err != nil {
				t.Errorf("edit: %v", err)
			}
		}
	}
	if info.Has(transport.CapFiles) {
		if _, err := tr.Deliver(ctx, transport.Event{ID: "f1", Thread: top.Thread, File: &transport.File{Name: "out.txt", Content: []byte("long output\n"), Comment: "the output"}}, ""); err != nil {
			t.Errorf("Deliver a file: %v", err)
		}
	}

	// What people write comes back in order, by structure.
	b, err := tr.Receive(ctx, "", 0)
	if err != nil {
		t.Fatalf("Receive now: %v", err)
	}
	cursor := b.Cursor
	want := []transport.Incoming{
		{Author: "U1", Channel: h.Channel, Ref: "1700000001.000001", Text: "~/notes: tidy"},
		{Author: "U1", Channel: h.Channel, Ref: "1700000001.000002", Thread: top.Thread, Text: "go on"},
		{Author: "U2", Channel: h.Channel, Command: "status", Text: "all"},
		{Author: "U1", Channel: h.Channel, Thread: top.Thread, InReplyTo: "q1", Choice: "Approve"},
	}
	for _, w := range want {
		h.Write(t, w)
	}
	var got []transport.Incoming
	for len(got) < len(want) && ctx.Err() == nil {
		b, err := tr.Receive(ctx, cursor, 5000)
		if err != nil {
			t.Fatalf("Receive: %v", err)
		}
		cursor = b.Cursor
		got = append(got, b.Incoming...)
	}
	// Refs of presses are the chat's own; compare what the host reads.
	norm := func(in []transport.Incoming) []transport.Incoming {
		out := append([]transport.Incoming(nil), in...)
		for i := range out {
			if out[i].Choice != "" {
				out[i].Ref = ""
			}
		}
		return out
	}
	if d := cmp.Diff(norm(want), norm(got)); d != "" {
		t.Errorf("what people wrote, as received (-want +got):\n%s", d)
	}
	b, err = tr.Receive(ctx, cursor, 50)
	if err != nil || len(b.Incoming) != 0 {
		t.Errorf("Receive after everything = %+v, %v; want nothing", b, err)
	}
}
