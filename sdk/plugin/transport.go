package plugin

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kulehq/kule/sdk/plugintls"
	transportv1 "github.com/kulehq/kule/sdk/proto/transport/v1"
	"github.com/kulehq/kule/sdk/transport"
)

// ServeTransport serves t as a transport plugin on the process's stdio and
// does not return until the host ends the plugin. Call it from the plugin's
// main.
func ServeTransport(t transport.Transport, name string) {
	hs, _ := Handshake(KindTransport)
	plugintls.Serve(TransportServeConfig(t, name, hs))
}

// TransportServeConfig is the go-plugin ServeConfig ServeTransport uses.
func TransportServeConfig(t transport.Transport, name string, hs goplugin.HandshakeConfig) *goplugin.ServeConfig {
	return &goplugin.ServeConfig{
		HandshakeConfig: hs,
		VersionedPlugins: map[int]goplugin.PluginSet{
			int(hs.ProtocolVersion): {KindTransport: &TransportPlugin{Impl: t}},
		},
		GRPCServer: goplugin.DefaultGRPCServer,
		Logger:     Logger("transport-" + name),
	}
}

// TransportPlugin is the go-plugin glue for the transport kind. A plugin
// sets Impl; the host leaves it nil and gets a *TransportClient.
type TransportPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	Impl transport.Transport
}

var _ goplugin.GRPCPlugin = (*TransportPlugin)(nil)

// GRPCServer registers the transport's gRPC service.
func (p *TransportPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	if p.Impl == nil {
		return errors.New("plugin: transport server: no transport given")
	}
	transportv1.RegisterTransportServer(s, &transportServer{t: p.Impl})
	return nil
}

// GRPCClient returns a *TransportClient on conn.
func (p *TransportPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return NewTransportClient(conn), nil
}

type transportServer struct {
	transportv1.UnimplementedTransportServer
	t transport.Transport
}

func recoveredTransport(err *error) {
	if r := recover(); r != nil {
		*err = status.Errorf(codes.Internal, "transport panicked: %v\n%s", r, debug.Stack())
	}
}

var capsToWire = map[transport.Capability]transportv1.Capability{
	transport.CapButtons: transportv1.Capability_CAPABILITY_BUTTONS,
	transport.CapEdit:    transportv1.Capability_CAPABILITY_EDIT,
	transport.CapFiles:   transportv1.Capability_CAPABILITY_FILES,
}

func (s *transportServer) Info(ctx context.Context, _ *transportv1.InfoRequest) (resp *transportv1.InfoResponse, err error) {
	defer recoveredTransport(&err)
	in, err := s.t.Info(ctx)
	if err != nil {
		return nil, status.Error(codes.Unknown, err.Error())
	}
	resp = &transportv1.InfoResponse{Name: in.Name}
	for _, c := range in.Capabilities {
		if w, ok := capsToWire[c]; ok {
			resp.Capabilities = append(resp.Capabilities, w)
		}
	}
	return resp, nil
}

func (s *transportServer) Deliver(ctx context.Context, req *transportv1.DeliverRequest) (resp *transportv1.DeliverResponse, err error) {
	defer recoveredTransport(&err)
	ev := EventFromWire(req.GetEvent())
	if err := ev.Check(); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	d, err := s.t.Deliver(ctx, ev, req.GetReplaces())
	if err != nil {
		return nil, status.Error(codes.Unknown, err.Error())
	}
	return &transportv1.DeliverResponse{Ref: d.Ref, Thread: d.Thread}, nil
}

func (s *transportServer) Receive(ctx context.Context, req *transportv1.ReceiveRequest) (resp *transportv1.ReceiveResponse, err error) {
	defer recoveredTransport(&err)
	b, err := s.t.Receive(ctx, req.GetCursor(), req.GetWaitMillis())
	if err != nil && len(b.Incoming) == 0 {
		if ctx.Err() != nil {
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		return nil, status.Error(codes.Unknown, err.Error())
	}
	resp = &transportv1.ReceiveResponse{Cursor: b.Cursor}
	for _, in := range b.Incoming {
		resp.Incoming = append(resp.Incoming, &transportv1.Incoming{
			Author: in.Author, InReplyTo: in.InReplyTo, Text: in.Text, Choice: in.Choice,
			Thread: in.Thread, Ref: in.Ref, Channel: in.Channel, Direct: in.Direct, Command: in.Command,
		})
	}
	return resp, nil
}

// EventToWire converts an event to its wire form.
func EventToWire(ev transport.Event) *transportv1.Event {
	w := &transportv1.Event{Id: ev.ID, Task: ev.Task, Thread: ev.Thread, Channel: ev.Channel}
	switch {
	case ev.Notice != nil:
		w.Body = &transportv1.Event_Notice{Notice: &transportv1.Notice{Text: ev.Notice.Text}}
	case ev.Question != nil:
		w.Body = &transportv1.Event_Question{Question: &transportv1.Question{Text: ev.Question.Text, Choices: ev.Question.Choices}}
	case ev.File != nil:
		w.Body = &transportv1.Event_File{File: &transportv1.File{Name: ev.File.Name, Content: ev.File.Content, Comment: ev.File.Comment}}
	}
	return w
}

// EventFromWire converts a wire event (nil is an empty event).
func EventFromWire(w *transportv1.Event) transport.Event {
	ev := transport.Event{ID: w.GetId(), Task: w.GetTask(), Thread: w.GetThread(), Channel: w.GetChannel()}
	switch b := w.GetBody().(type) {
	case *transportv1.Event_Notice:
		ev.Notice = &transport.Notice{Text: b.Notice.GetText()}
	case *transportv1.Event_Question:
		ev.Question = &transport.Question{Text: b.Question.GetText(), Choices: b.Question.GetChoices()}
	case *transportv1.Event_File:
		ev.File = &transport.File{Name: b.File.GetName(), Content: b.File.GetContent(), Comment: b.File.GetComment()}
	}
	return ev
}

// TransportClient talks to a transport plugin over gRPC; it is itself a
// transport.Transport, so the host drives a plugin and an in-process
// transport the same way.
type TransportClient struct {
	c transportv1.TransportClient
}

var _ transport.Transport = (*TransportClient)(nil)

// NewTransportClient returns a client on an established connection.
func NewTransportClient(conn grpc.ClientConnInterface) *TransportClient {
	return &TransportClient{c: transportv1.NewTransportClient(conn)}
}

// Info asks the transport its name and capabilities.
func (c *TransportClient) Info(ctx context.Context) (transport.Info, error) {
	r, err := c.c.Info(ctx, &transportv1.InfoRequest{})
	if err != nil {
		return transport.Info{}, wireErr("info", err)
	}
	in := transport.Info{Name: r.GetName()}
	for _, w := range r.GetCapabilities() {
		for c, cw := range capsToWire {
			if cw == w {
				in.Capabilities = append(in.Capabilities, c)
			}
		}
	}
	return in, nil
}

// Deliver posts one event.
func (c *TransportClient) Deliver(ctx context.Context, ev transport.Event, replaces string) (transport.Delivered, error) {
	if err := ev.Check(); err != nil {
		return transport.Delivered{}, fmt.Errorf("plugin: deliver: %w", err)
	}
	r, err := c.c.Deliver(ctx, &transportv1.DeliverRequest{Event: EventToWire(ev), Replaces: replaces})
	if err != nil {
		return transport.Delivered{}, wireErr("deliver", err)
	}
	return transport.Delivered{Ref: r.GetRef(), Thread: r.GetThread()}, nil
}

// Receive asks for what people wrote since cursor.
func (c *TransportClient) Receive(ctx context.Context, cursor string, waitMillis int64) (transport.Batch, error) {
	r, err := c.c.Receive(ctx, &transportv1.ReceiveRequest{Cursor: cursor, WaitMillis: waitMillis})
	if err != nil {
		return transport.Batch{Cursor: cursor}, wireErr("receive", err)
	}
	b := transport.Batch{Cursor: r.GetCursor()}
	for _, w := range r.GetIncoming() {
		b.Incoming = append(b.Incoming, transport.Incoming{
			Author: w.GetAuthor(), InReplyTo: w.GetInReplyTo(), Text: w.GetText(), Choice: w.GetChoice(),
			Thread: w.GetThread(), Ref: w.GetRef(), Channel: w.GetChannel(), Direct: w.GetDirect(), Command: w.GetCommand(),
		})
	}
	return b, nil
}
