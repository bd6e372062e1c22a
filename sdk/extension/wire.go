package extension

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/kulehq/kule/sdk/plugin"
	"github.com/kulehq/kule/sdk/plugintls"
	extensionv1 "github.com/kulehq/kule/sdk/proto/extension/v1"
)

// Kind is the extension host's plugin kind: its name in go-plugin's plugin
// set and the first half of `kule-plugins __plugin extension/host`.
const Kind = "extension"

// HostName is the built-in host's name: `kule-plugins __plugin extension/host`.
const HostName = Kind + "/host"

// ProtocolVersion is the extension host protocol's major version.
const ProtocolVersion = extensionv1.ProtocolVersion

// Handshake is the go-plugin handshake of the extension host: Kule's magic
// cookie and this protocol's version.
func Handshake() goplugin.HandshakeConfig {
	return goplugin.HandshakeConfig{ProtocolVersion: ProtocolVersion, MagicCookieKey: plugin.MagicCookieKey, MagicCookieValue: plugin.MagicCookieValue}
}

// Error kinds a call's failure carries (CallError.Kind).
const (
	FailInterrupted = "interrupted" // the call ran past its time limit and was stopped
	FailMemory      = "memory"      // the runtime went past its memory ceiling and was stopped
	FailException   = "exception"   // the script threw
	FailNotFound    = "not-found"   // no such extension, command or hook
	FailRefused     = "refused"     // the request itself was refused
)

// CallError is a call that failed inside the host.
type CallError struct {
	Kind    string
	Message string
}

func (e *CallError) Error() string { return e.Kind + ": " + e.Message }

// LoadRequest makes an extension's runtime.
type LoadRequest struct {
	Extension, Version string
	Files              map[string][]byte
	Main               string
	Settings           json.RawMessage
	CallTimeoutMS      int64
	MemoryLimitBytes   int64
}

// InvokeRequest calls a command or hook of a loaded extension.
type InvokeRequest struct {
	Extension string
	Kind      string // "command" | "review.notes"
	Name      string
	Args      json.RawMessage
}

// Result is a call's answer.
type Result struct {
	Value      json.RawMessage
	Registered []string
	HeapBytes  int64
}

// Bridge carries a call the extension makes into Kule (method, JSON
// arguments) and returns the JSON answer. The kernel's Bridge checks the
// extension's permissions before it does anything.
type Bridge func(ctx context.Context, method string, args json.RawMessage) (json.RawMessage, error)

// Handler is what the extension host implements: one runtime per
// extension, loaded and invoked. A call's failure inside the runtime is a
// *CallError.
type Handler interface {
	Load(ctx context.Context, req LoadRequest, bridge Bridge) (Result, error)
	Invoke(ctx context.Context, req InvokeRequest, bridge Bridge) (Result, error)
}

// HostPlugin is the go-plugin plugin of the extension host kind: Impl on
// the host's side, a *HostClient on the kernel's.
type HostPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	Impl Handler
}

var _ goplugin.GRPCPlugin = (*HostPlugin)(nil)

func (p *HostPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	extensionv1.RegisterExtensionHostServer(s, &server{impl: p.Impl})
	return nil
}

func (p *HostPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &HostClient{c: extensionv1.NewExtensionHostClient(c)}, nil
}

// Serve serves h as the extension host; it returns when the kernel ends it.
func Serve(h Handler) {
	plugintls.Serve(&goplugin.ServeConfig{
		HandshakeConfig: Handshake(),
		VersionedPlugins: map[int]goplugin.PluginSet{
			ProtocolVersion: {Kind: &HostPlugin{Impl: h}},
		},
		GRPCServer: goplugin.DefaultGRPCServer,
		Logger:     plugin.Logger(HostName),
	})
}

type server struct {
	extensionv1.UnimplementedExtensionHostServer
	impl Handler
}

func (s *server) Info(context.Context, *extensionv1.InfoRequest) (*extensionv1.InfoResponse, error) {
	return &extensionv1.InfoResponse{Name: HostName, Runtime: "goja"}, nil
}

// Session runs each call of the kernel in a goroutine of its own; a
// bridge call is sent on the stream and waits for its answer.
func (s *server) Session(stream extensionv1.ExtensionHost_SessionServer) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	var (
		sendMu  sync.Mutex
		mu      sync.Mutex
		nextID  uint64
		waiting = map[uint64]chan *extensionv1.BridgeAnswer{}
		calls   sync.WaitGroup
	)
	send := func(m *extensionv1.HostMessage) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		return stream.Send(m)
	}
	bridge := func(ctx context.Context, method string, args json.RawMessage) (json.RawMessage, error) {
		mu.Lock()
		nextID++
		id := nextID
		ch := make(chan *extensionv1.BridgeAnswer, 1)
		waiting[id] = ch
		mu.Unlock()
		defer func() { mu.Lock(); delete(waiting, id); mu.Unlock() }()
		if err := send(&extensionv1.HostMessage{Msg: &extensionv1.HostMessage_Bridge{Bridge: &extensionv1.BridgeCall{BridgeId: id, Method: method, ArgsJson: args}}}); err != nil {
			return nil, err
		}
		select {
		case a := <-ch:
			if a.Error != "" {
				return nil, errors.New(a.Error)
			}
			return a.ResultJson, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	done := func(id uint64, r Result, err error) {
		d := &extensionv1.CallDone{ResultJson: r.Value, Registered: r.Registered, HeapBytes: r.HeapBytes}
		if err != nil {
			var ce *CallError
			if errors.As(err, &ce) {
				d.Error, d.ErrorKind = ce.Message, ce.Kind
			} else {
				d.Error, d.ErrorKind = err.Error(), FailRefused
			}
		}
		_ = send(&extensionv1.HostMessage{Id: id, Msg: &extensionv1.HostMessage_Done{Done: d}})
	}
	defer calls.Wait()
	for {
		m, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch msg := m.Msg.(type) {
		case *extensionv1.KernelMessage_Answer:
			mu.Lock()
			ch := waiting[msg.Answer.BridgeId]
			mu.Unlock()
			if ch != nil {
				ch <- msg.Answer
			}
		case *extensionv1.KernelMessage_Load:
			l := msg.Load
			calls.Add(1)
			go func(id uint64) {
				defer calls.Done()
				r, err := s.impl.Load(ctx, LoadRequest{Extension: l.Extension, Version: l.Version, Files: l.Files, Main: l.Main,
					Settings: l.SettingsJson, CallTimeoutMS: l.CallTimeoutMs, MemoryLimitBytes: l.MemoryLimitBytes}, bridge)
				done(id, r, err)
			}(m.Id)
		case *extensionv1.KernelMessage_Invoke:
			in := msg.Invoke
			calls.Add(1)
			go func(id uint64) {
				defer calls.Done()
				r, err := s.impl.Invoke(ctx, InvokeRequest{Extension: in.Extension, Kind: in.Kind, Name: in.Name, Args: in.ArgsJson}, bridge)
				done(id, r, err)
			}(m.Id)
		}
	}
}

// HostClient is the kernel's side of the extension host.
type HostClient struct {
	c extensionv1.ExtensionHostClient
}

// Info asks the host its name and runtime.
func (c *HostClient) Info(ctx context.Context) (name, runtime string, err error) {
	r, err := c.c.Info(ctx, &extensionv1.InfoRequest{})
	if err != nil {
		return "", "", err
	}
	return r.Name, r.Runtime, nil
}

// Session is one open stream to the host. Its bridge answers the
// extension's calls into Kule, one goroutine each.
type Session struct {
	stream extensionv1.ExtensionHost_SessionClient
	cancel context.CancelFunc
	bridge Bridge
	ctx    context.Context

	sendMu sync.Mutex
	mu     sync.Mutex
	nextID uint64
	calls  map[uint64]chan *extensionv1.CallDone
	err    error // why the stream ended
}

// Open starts a session whose bridge calls go to bridge.
func (c *HostClient) Open(ctx context.Context, bridge Bridge) (*Session, error) {
	ctx, cancel := context.WithCancel(ctx)
	st, err := c.c.Session(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	s := &Session{stream: st, cancel: cancel, bridge: bridge, ctx: ctx, calls: map[uint64]chan *extensionv1.CallDone{}}
	go s.recv()
	return s, nil
}

// Close ends the session.
func (s *Session) Close() {
	s.sendMu.Lock()
	_ = s.stream.CloseSend()
	s.sendMu.Unlock()
	s.cancel()
}

func (s *Session) send(m *extensionv1.KernelMessage) error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	return s.stream.Send(m)
}

func (s *Session) recv() {
	for {
		m, err := s.stream.Recv()
		if err != nil {
			s.mu.Lock()
			s.err = err
			for id, ch := range s.calls {
				close(ch)
				delete(s.calls, id)
			}
			s.mu.Unlock()
			return
		}
		switch msg := m.Msg.(type) {
		case *extensionv1.HostMessage_Done:
			s.mu.Lock()
			ch := s.calls[m.Id]
			delete(s.calls, m.Id)
			s.mu.Unlock()
			if ch != nil {
				ch <- msg.Done
			}
		case *extensionv1.HostMessage_Bridge:
			b := msg.Bridge
			go func() {
				a := &extensionv1.BridgeAnswer{BridgeId: b.BridgeId}
				res, err := s.bridge(s.ctx, b.Method, b.ArgsJson)
				if err != nil {
					a.Error = err.Error()
				} else {
					a.ResultJson = res
				}
				_ = s.send(&extensionv1.KernelMessage{Msg: &extensionv1.KernelMessage_Answer{Answer: a}})
			}()
		}
	}
}

func (s *Session) call(ctx context.Context, m *extensionv1.KernelMessage) (Result, error) {
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return Result{}, fmt.Errorf("extension host gone: %w", s.err)
	}
	s.nextID++
	m.Id = s.nextID
	ch := make(chan *extensionv1.CallDone, 1)
	s.calls[m.Id] = ch
	s.mu.Unlock()
	if err := s.send(m); err != nil {
		return Result{}, fmt.Errorf("extension host: %w", err)
	}
	select {
	case d, ok := <-ch:
		if !ok {
			s.mu.Lock()
			err := s.err
			s.mu.Unlock()
			return Result{}, fmt.Errorf("extension host gone: %w", err)
		}
		r := Result{Value: d.ResultJson, Registered: d.Registered, HeapBytes: d.HeapBytes}
		if d.ErrorKind != "" || d.Error != "" {
			return r, &CallError{Kind: d.ErrorKind, Message: d.Error}
		}
		return r, nil
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
}

// Load loads an extension into the host.
func (s *Session) Load(ctx context.Context, req LoadRequest) (Result, error) {
	return s.call(ctx, &extensionv1.KernelMessage{Msg: &extensionv1.KernelMessage_Load{Load: &extensionv1.LoadRequest{
		Extension: req.Extension, Version: req.Version, Files: req.Files, Main: req.Main, SettingsJson: req.Settings,
		CallTimeoutMs: req.CallTimeoutMS, MemoryLimitBytes: req.MemoryLimitBytes}}})
}

// Invoke calls a command or hook.
func (s *Session) Invoke(ctx context.Context, req InvokeRequest) (Result, error) {
	return s.call(ctx, &extensionv1.KernelMessage{Msg: &extensionv1.KernelMessage_Invoke{Invoke: &extensionv1.InvokeRequest{
		Extension: req.Extension, Kind: req.Kind, Name: req.Name, ArgsJson: req.Args}}})
}
