package plugin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kulehq/kule/sdk/previewer"
	previewerv1 "github.com/kulehq/kule/sdk/proto/previewer/v1"
)

// Previewer capabilities.
const (
	// CapPaging: the previewer honours MaxBlocks and says Truncated.
	CapPaging Capability = "paging"
)

// PreviewerPlugin is the go-plugin glue for the previewer kind. A plugin sets
// Impl; the host leaves it nil and gets a *PreviewerClient from GRPCClient.
type PreviewerPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	Impl previewer.Previewer
}

var _ goplugin.GRPCPlugin = (*PreviewerPlugin)(nil)

// GRPCServer registers the previewer's gRPC service.
func (p *PreviewerPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	if p.Impl == nil {
		return fmt.Errorf("plugin: previewer server: no previewer given")
	}
	previewerv1.RegisterPreviewerServer(s, &previewerServer{p: p.Impl})
	return nil
}

// GRPCClient returns a *PreviewerClient on conn.
func (p *PreviewerPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return NewPreviewerClient(conn), nil
}

// previewerServer answers the previewer protocol for one previewer.
type previewerServer struct {
	previewerv1.UnimplementedPreviewerServer
	p previewer.Previewer
}

func (s *previewerServer) Info(context.Context, *previewerv1.InfoRequest) (*previewerv1.InfoResponse, error) {
	return &previewerv1.InfoResponse{Name: s.p.Name(), Capabilities: []previewerv1.Capability{previewerv1.Capability_CAPABILITY_PAGING}}, nil
}

func (s *previewerServer) Accepts(_ context.Context, req *previewerv1.AcceptsRequest) (resp *previewerv1.AcceptsResponse, err error) {
	defer recoveredAs("previewer", &err)
	return &previewerv1.AcceptsResponse{Accepts: s.p.Accepts(req.GetPath())}, nil
}

func (s *previewerServer) Preview(ctx context.Context, req *previewerv1.PreviewRequest) (resp *previewerv1.PreviewResponse, err error) {
	defer recoveredAs("previewer", &err)
	in := previewer.Request{Path: req.GetPath(), Content: req.GetSrc(), MaxBlocks: int(req.GetMaxBlocks()), Format: req.GetFormat()}
	if c := req.GetCrop(); c != nil {
		in.Crop = &previewer.Region{X1: int(c.GetX1()), Y1: int(c.GetY1()), X2: int(c.GetX2()), Y2: int(c.GetY2())}
	}
	r, err := s.p.Preview(ctx, in)
	if errors.Is(err, previewer.ErrCannotPreview) {
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	}
	if err != nil {
		return nil, status.Error(codes.Unknown, err.Error())
	}
	return responseToWire(r), nil
}

// recoveredAs turns a panic of the plugin into an error for this one call.
func recoveredAs(what string, err *error) {
	if r := recover(); r != nil {
		*err = status.Errorf(codes.Internal, "%s panicked: %v", what, r)
	}
}

// PreviewerClient talks to a previewer plugin over gRPC (the host puts a
// deadline on every call's context).
type PreviewerClient struct {
	c previewerv1.PreviewerClient
}

// NewPreviewerClient returns a client on an established connection.
func NewPreviewerClient(conn grpc.ClientConnInterface) *PreviewerClient {
	return &PreviewerClient{c: previewerv1.NewPreviewerClient(conn)}
}

// Info asks the previewer its name and capabilities.
func (c *PreviewerClient) Info(ctx context.Context) (Info, error) {
	r, err := c.c.Info(ctx, &previewerv1.InfoRequest{})
	if err != nil {
		return Info{}, wireErr("info", err)
	}
	info := Info{Name: r.GetName()}
	for _, cp := range r.GetCapabilities() {
		if cp == previewerv1.Capability_CAPABILITY_PAGING {
			info.Capabilities = append(info.Capabilities, CapPaging)
		}
	}
	return info, nil
}

// Accepts asks whether the previewer reads the file at path.
func (c *PreviewerClient) Accepts(ctx context.Context, path string) (bool, error) {
	r, err := c.c.Accepts(ctx, &previewerv1.AcceptsRequest{Path: path})
	if err != nil {
		return false, wireErr("accepts", err)
	}
	return r.GetAccepts(), nil
}

// Preview asks for the preview of req.Content. A file the previewer cannot
// show is an error wrapping previewer.ErrCannotPreview with its reason. The
// result is as the plugin sent it: the caller checks it (previewer.Validate).
func (c *PreviewerClient) Preview(ctx context.Context, req previewer.Request) (previewer.Response, error) {
	max := int32(0)
	if req.MaxBlocks > 0 && req.MaxBlocks <= math.MaxInt32 {
		max = int32(req.MaxBlocks)
	}
	wire := &previewerv1.PreviewRequest{Path: req.Path, Src: req.Content, MaxBlocks: max, Format: req.Format}
	if c := req.Crop; c != nil {
		wire.Crop = &previewerv1.Region{X1: clamp32(c.X1), Y1: clamp32(c.Y1), X2: clamp32(c.X2), Y2: clamp32(c.Y2)}
	}
	// The request carries the whole file, and the answer may be as large:
	// gRPC's 4 MiB default would fail every file above it.
	r, err := c.c.Preview(ctx, wire, grpc.MaxCallSendMsgSize(previewer.MaxMessage), grpc.MaxCallRecvMsgSize(previewer.MaxMessage))
	if status.Code(err) == codes.FailedPrecondition {
		msg := status.Convert(err).Message()
		msg = strings.TrimPrefix(msg, previewer.ErrCannotPreview.Error()+": ")
		return previewer.Response{}, fmt.Errorf("%w: %s", previewer.ErrCannotPreview, msg)
	}
	if err != nil {
		return previewer.Response{}, wireErr("preview", err)
	}
	return responseFromWire(r), nil
}

func responseToWire(r previewer.Response) *previewerv1.PreviewResponse {
	out := &previewerv1.PreviewResponse{Truncated: r.Truncated, Kind: r.Kind, Language: r.Language, Notes: r.Notes, CropPng: r.CropPNG, Blocks: make([]*previewerv1.Block, 0, len(r.Blocks))}
	for _, b := range r.Blocks {
		w := &previewerv1.Block{}
		switch {
		case b.Line != nil:
			w.Block = &previewerv1.Block_Line{Line: &previewerv1.TextLine{Text: b.Line.Text, Number: clamp32(b.Line.Number)}}
		case b.Heading != nil:
			w.Block = &previewerv1.Block_Heading{Heading: &previewerv1.Heading{Level: clamp32(b.Heading.Level), Text: b.Heading.Text}}
		case b.Paragraph != nil:
			p := &previewerv1.Paragraph{Number: clamp32(b.Paragraph.Number), Marker: b.Paragraph.Marker, Level: clamp32(b.Paragraph.Level)}
			for _, r := range b.Paragraph.Runs {
				p.Runs = append(p.Runs, &previewerv1.Run{Text: r.Text, Bold: r.Bold, Italic: r.Italic, Code: r.Code, Link: r.Link})
			}
			w.Block = &previewerv1.Block_Paragraph{Paragraph: p}
		case b.Code != nil:
			w.Block = &previewerv1.Block_Code{Code: &previewerv1.Code{Language: b.Code.Language, Text: b.Code.Text}}
		case b.Row != nil:
			w.Block = &previewerv1.Block_Row{Row: &previewerv1.TableRow{Sheet: b.Row.Sheet, Row: clamp32(b.Row.Number), Cells: b.Row.Cells, Formulas: b.Row.Formulas, Table: clamp32(b.Row.Table)}}
		case b.Image != nil:
			w.Block = &previewerv1.Block_Image{Image: &previewerv1.ImageInfo{Format: b.Image.Format, Width: clamp32(b.Image.Width), Height: clamp32(b.Image.Height), Metadata: b.Image.Metadata}}
		}
		out.Blocks = append(out.Blocks, w)
	}
	return out
}

func responseFromWire(r *previewerv1.PreviewResponse) previewer.Response {
	out := previewer.Response{Truncated: r.GetTruncated(), Kind: r.GetKind(), Language: r.GetLanguage(), Notes: r.GetNotes(), CropPNG: r.GetCropPng(), Blocks: make([]previewer.Block, 0, len(r.GetBlocks()))}
	for _, w := range r.GetBlocks() {
		var b previewer.Block
		switch x := w.GetBlock().(type) {
		case *previewerv1.Block_Line:
			b.Line = &previewer.Line{Number: int(x.Line.GetNumber()), Text: x.Line.GetText()}
		case *previewerv1.Block_Heading:
			b.Heading = &previewer.Heading{Level: int(x.Heading.GetLevel()), Text: x.Heading.GetText()}
		case *previewerv1.Block_Paragraph:
			p := &previewer.Paragraph{Number: int(x.Paragraph.GetNumber()), Marker: x.Paragraph.GetMarker(), Level: int(x.Paragraph.GetLevel())}
			for _, r := range x.Paragraph.GetRuns() {
				p.Runs = append(p.Runs, previewer.Run{Text: r.GetText(), Bold: r.GetBold(), Italic: r.GetItalic(), Code: r.GetCode(), Link: r.GetLink()})
			}
			b.Paragraph = p
		case *previewerv1.Block_Code:
			b.Code = &previewer.Code{Language: x.Code.GetLanguage(), Text: x.Code.GetText()}
		case *previewerv1.Block_Row:
			b.Row = &previewer.Row{Sheet: x.Row.GetSheet(), Number: int(x.Row.GetRow()), Cells: x.Row.GetCells(), Formulas: x.Row.GetFormulas(), Table: int(x.Row.GetTable())}
		case *previewerv1.Block_Image:
			b.Image = &previewer.Image{Format: x.Image.GetFormat(), Width: int(x.Image.GetWidth()), Height: int(x.Image.GetHeight()), Metadata: x.Image.GetMetadata()}
		}
		// A block with nothing set stays empty: Validate refuses it.
		out.Blocks = append(out.Blocks, b)
	}
	return out
}

func clamp32(v int) int32 {
	if v > math.MaxInt32 {
		return math.MaxInt32
	}
	if v < math.MinInt32 {
		return math.MinInt32
	}
	return int32(v)
}
