package plugin

import (
	"context"
	"fmt"
	"runtime/debug"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kulehq/kule/sdk/differ"
	differv1 "github.com/kulehq/kule/sdk/proto/differ/v1"
)

// Capability is an optional ability a plugin announces.
type Capability string

// Differ capabilities.
const (
	// CapMerge: the differ implements differ.Merger.
	CapMerge Capability = "merge"
)

// Info is what a plugin says about itself.
type Info struct {
	Name         string
	Capabilities []Capability
}

// Has reports whether the plugin announced c.
func (i Info) Has(c Capability) bool {
	for _, x := range i.Capabilities {
		if x == c {
			return true
		}
	}
	return false
}

// DifferPlugin is the go-plugin glue for the differ kind. A plugin sets Impl;
// the host leaves it nil and gets a *DifferClient from GRPCClient.
type DifferPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	Impl differ.Differ
}

var _ goplugin.GRPCPlugin = (*DifferPlugin)(nil)

// GRPCServer registers the differ's gRPC service.
func (p *DifferPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	if p.Impl == nil {
		return fmt.Errorf("plugin: differ server: no differ given")
	}
	differv1.RegisterDifferServer(s, &differServer{d: p.Impl})
	return nil
}

// GRPCClient returns a *DifferClient on conn.
func (p *DifferPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return NewDifferClient(conn), nil
}

// differServer answers the differ protocol for one differ.Differ. Optional
// abilities are found by type assertion; a missing one answers
// codes.Unimplemented through the embedded UnimplementedDifferServer.
type differServer struct {
	differv1.UnimplementedDifferServer
	d differ.Differ
}

// recovered turns a panic of the differ into an error for this one call, so
// one bad file does not take the plugin (and every later file) down.
func recovered(err *error) {
	if r := recover(); r != nil {
		*err = status.Errorf(codes.Internal, "differ panicked: %v\n%s", r, debug.Stack())
	}
}

func (s *differServer) Info(context.Context, *differv1.InfoRequest) (*differv1.InfoResponse, error) {
	resp := &differv1.InfoResponse{Name: s.d.Name()}
	if _, ok := s.d.(differ.Merger); ok {
		resp.Capabilities = append(resp.Capabilities, differv1.Capability_CAPABILITY_MERGE)
	}
	return resp, nil
}

func (s *differServer) Accepts(_ context.Context, req *differv1.AcceptsRequest) (resp *differv1.AcceptsResponse, err error) {
	defer recovered(&err)
	return &differv1.AcceptsResponse{Accepts: s.d.Accepts(req.GetPath())}, nil
}

func (s *differServer) Entities(ctx context.Context, req *differv1.EntitiesRequest) (resp *differv1.EntitiesResponse, err error) {
	defer recovered(&err)
	r, err := s.d.Entities(ctx, differ.EntitiesRequest{Path: req.GetPath(), Content: req.GetSrc()})
	if err != nil {
		return nil, status.Error(codes.Unknown, err.Error())
	}
	return &differv1.EntitiesResponse{Entities: entitiesToWire(r.Entities)}, nil
}

func (s *differServer) Merge(ctx context.Context, req *differv1.MergeRequest) (resp *differv1.MergeResponse, err error) {
	m, ok := s.d.(differ.Merger)
	if !ok {
		return s.UnimplementedDifferServer.Merge(ctx, req)
	}
	defer recovered(&err)
	r, err := m.Merge(ctx, differ.MergeRequest{Path: req.GetPath(), Base: req.GetBase(), Ours: req.GetOurs(), Theirs: req.GetTheirs()})
	if err != nil {
		return nil, status.Error(codes.Unknown, err.Error())
	}
	return &differv1.MergeResponse{Merged: r.Merged, Conflicts: r.Conflicts, Notes: r.Notes}, nil
}

// DifferClient talks to a differ plugin over gRPC. Its Entities and Merge
// take and answer the same types as differ.Differ and differ.Merger (the host
// puts a deadline on every call's context).
type DifferClient struct {
	c differv1.DifferClient
}

// NewDifferClient returns a client on an established connection.
func NewDifferClient(conn grpc.ClientConnInterface) *DifferClient {
	return &DifferClient{c: differv1.NewDifferClient(conn)}
}

// Info asks the differ its name and capabilities.
func (c *DifferClient) Info(ctx context.Context) (Info, error) {
	r, err := c.c.Info(ctx, &differv1.InfoRequest{})
	if err != nil {
		return Info{}, wireErr("info", err)
	}
	info := Info{Name: r.GetName()}
	for _, cp := range r.GetCapabilities() {
		switch cp {
		case differv1.Capability_CAPABILITY_MERGE:
			info.Capabilities = append(info.Capabilities, CapMerge)
		}
	}
	return info, nil
}

// Accepts asks whether the differ reads the file at path.
func (c *DifferClient) Accepts(ctx context.Context, path string) (bool, error) {
	r, err := c.c.Accepts(ctx, &differv1.AcceptsRequest{Path: path})
	if err != nil {
		return false, wireErr("accepts", err)
	}
	return r.GetAccepts(), nil
}

// Entities asks for the entities of req.Content. The result is as the plugin
// sent it: the caller checks it (differ.Validate) before trusting any offset.
func (c *DifferClient) Entities(ctx context.Context, req differ.EntitiesRequest) (differ.EntitiesResponse, error) {
	r, err := c.c.Entities(ctx, &differv1.EntitiesRequest{Path: req.Path, Src: req.Content})
	if err != nil {
		return differ.EntitiesResponse{}, wireErr("entities", err)
	}
	return differ.EntitiesResponse{Entities: entitiesFromWire(r.GetEntities())}, nil
}

// Merge asks the differ to merge three versions; ErrUnimplemented when the
// differ has no Merger.
func (c *DifferClient) Merge(ctx context.Context, req differ.MergeRequest) (differ.MergeResponse, error) {
	r, err := c.c.Merge(ctx, &differv1.MergeRequest{Path: req.Path, Base: req.Base, Ours: req.Ours, Theirs: req.Theirs})
	if err != nil {
		return differ.MergeResponse{}, wireErr("merge", err)
	}
	res := differ.MergeResponse{Conflicts: r.GetConflicts(), Notes: r.GetNotes()}
	if len(res.Conflicts) == 0 {
		res.Merged = r.GetMerged()
		if res.Merged == nil {
			res.Merged = []byte{}
		}
	}
	return res, nil
}

func wireErr(op string, err error) error {
	if status.Code(err) == codes.Unimplemented {
		return fmt.Errorf("plugin: %s: %w", op, ErrUnimplemented)
	}
	return fmt.Errorf("plugin: %s: %w", op, err)
}

func entitiesToWire(es []differ.Entity) []*differv1.Entity {
	out := make([]*differv1.Entity, len(es))
	for i, e := range es {
		out[i] = &differv1.Entity{Kind: e.Kind, Name: e.Name, Start: int64(e.Start), End: int64(e.End), Parent: e.Parent}
	}
	return out
}

func entitiesFromWire(ws []*differv1.Entity) []differ.Entity {
	out := make([]differ.Entity, len(ws))
	for i, w := range ws {
		out[i] = differ.Entity{Kind: w.GetKind(), Name: w.GetName(), Start: clampInt(w.GetStart()), End: clampInt(w.GetEnd()), Parent: w.GetParent()}
	}
	return out
}

// clampInt keeps an int64 from the wire representable as int without
// wrapping; Validate then rejects it as out of range.
func clampInt(v int64) int {
	const maxInt = int64(^uint(0) >> 1)
	if v > maxInt {
		return int(maxInt)
	}
	if v < -maxInt {
		return int(-maxInt)
	}
	return int(v)
}
