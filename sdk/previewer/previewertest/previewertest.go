// Package previewertest is the conformance test a previewer's author runs
// against their own previewer. Run checks the contract every Kule previewer
// keeps: it never panics or hangs on bad input (cut, flipped or empty
// files), every answer passes previewer.Validate, a refusal wraps
// previewer.ErrCannotPreview, the same bytes always give the same answer,
// MaxBlocks is honoured, and all of it survives the trip over the plugin
// wire. Check is the same contract for one input, for fuzz targets.
//
//	func TestConformance(t *testing.T) {
//		previewertest.Run(t, mypreviewer.New(), previewertest.Sample{Path: "a.ini", Src: src})
//	}
package previewertest

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"time"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/kulehq/kule/sdk/plugin"
	"github.com/kulehq/kule/sdk/previewer"
)

// Sample is one real file the previewer should read.
type Sample struct {
	Path string
	Src  []byte
}

// Timeout is how long one call may take before Check calls it a hang.
var Timeout = 10 * time.Second

// Sentinel errors of Check.
var (
	ErrPanic    = errors.New("previewertest: previewer panicked")
	ErrHang     = errors.New("previewertest: previewer did not return in time")
	ErrContract = errors.New("previewertest: contract broken")
)

type result struct {
	r   previewer.Response
	err error
}

func call(p previewer.Previewer, req previewer.Request) (previewer.Response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- result{err: fmt.Errorf("%w: %v", ErrPanic, r)}
			}
		}()
		r, err := p.Preview(ctx, req)
		done <- result{r, err}
	}()
	select {
	case res := <-done:
		return res.r, res.err
	case <-time.After(Timeout + time.Second):
		return previewer.Response{}, fmt.Errorf("%w: %s after %v", ErrHang, req.Path, Timeout)
	}
}

// Check previews src as path and checks one call's contract: no panic, no
// hang, an answer that passes Validate or an error wrapping ErrCannotPreview,
// and the same outcome a second time.
func Check(p previewer.Previewer, path string, src []byte) error {
	req := previewer.Request{Path: path, Content: src}
	first, ferr := call(p, req)
	if errors.Is(ferr, ErrPanic) || errors.Is(ferr, ErrHang) {
		return ferr
	}
	if ferr != nil && !errors.Is(ferr, previewer.ErrCannotPreview) {
		return fmt.Errorf("%w: %s: an error that does not wrap previewer.ErrCannotPreview: %v", ErrContract, path, ferr)
	}
	if ferr == nil {
		if err := previewer.Validate(first, req.Limit()); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrContract, path, err)
		}
	}
	second, serr := call(p, req)
	if (ferr == nil) != (serr == nil) || (ferr == nil && !reflect.DeepEqual(first, second)) {
		return fmt.Errorf("%w: %s: two calls on the same bytes answered differently", ErrContract, path)
	}
	return nil
}

// Run checks p on samples and on damaged versions of them.
func Run(t *testing.T, p previewer.Previewer, samples ...Sample) {
	t.Helper()
	if len(samples) == 0 {
		t.Fatal("previewertest: give at least one sample")
	}
	t.Run("name", func(t *testing.T) {
		if a, b := p.Name(), p.Name(); a == "" || a != b {
			t.Fatalf("Name() = %q, then %q: want one stable, non-empty name", a, b)
		}
	})
	t.Run("samples", func(t *testing.T) {
		for _, s := range samples {
			if !p.Accepts(s.Path) {
				t.Errorf("%s: Accepts = false for a sample", s.Path)
			}
			if err := Check(p, s.Path, s.Src); err != nil {
				t.Error(err)
			}
			if _, err := call(p, previewer.Request{Path: s.Path, Content: s.Src}); err != nil {
				t.Errorf("%s: a sample does not preview: %v", s.Path, err)
			}
		}
	})
	t.Run("damaged", func(t *testing.T) {
		rng := rand.New(rand.NewSource(1))
		for _, s := range samples {
			for _, src := range damaged(rng, s.Src) {
				if err := Check(p, s.Path, src); err != nil {
					t.Error(err)
				}
			}
		}
	})
	t.Run("max-blocks", func(t *testing.T) {
		for _, s := range samples {
			r, err := call(p, previewer.Request{Path: s.Path, Content: s.Src, MaxBlocks: 1})
			if err == nil && len(r.Blocks) > 1 {
				t.Errorf("%s: %d blocks for MaxBlocks 1", s.Path, len(r.Blocks))
			}
		}
	})
	t.Run("wire", func(t *testing.T) { checkWire(t, p, samples) })
}

// damaged are versions of src a hostile or broken file could be: empty, cut
// at several places, with bytes flipped.
func damaged(rng *rand.Rand, src []byte) [][]byte {
	out := [][]byte{{}, {0}}
	for _, n := range []int{1, len(src) / 3, len(src) / 2, len(src) - 1} {
		if n > 0 && n < len(src) {
			out = append(out, src[:n])
		}
	}
	for i := 0; i < 8 && len(src) > 0; i++ {
		b := append([]byte(nil), src...)
		for j := 0; j < 1+len(b)/64; j++ {
			b[rng.Intn(len(b))] ^= byte(1 + rng.Intn(255))
		}
		out = append(out, b)
	}
	return out
}

func checkWire(t *testing.T, p previewer.Previewer, samples []Sample) {
	client, server := goplugin.TestPluginGRPCConn(t, false, map[string]goplugin.Plugin{
		plugin.KindPreviewer: &plugin.PreviewerPlugin{Impl: p},
	})
	defer client.Close()
	defer server.Stop()
	raw, err := client.Dispense(plugin.KindPreviewer)
	if err != nil {
		t.Fatal(err)
	}
	c := raw.(*plugin.PreviewerClient)
	ctx := context.Background()
	info, err := c.Info(ctx)
	if err != nil || info.Name != p.Name() {
		t.Fatalf("info over the wire = %+v, %v; want name %q", info, err, p.Name())
	}
	for _, s := range samples {
		if ok, err := c.Accepts(ctx, s.Path); err != nil || ok != p.Accepts(s.Path) {
			t.Errorf("%s: accepts over the wire = %v, %v", s.Path, ok, err)
		}
		req := previewer.Request{Path: s.Path, Content: s.Src}
		got, gerr := c.Preview(ctx, req)
		want, werr := call(p, req)
		if (gerr == nil) != (werr == nil) {
			t.Errorf("%s: preview over the wire: error %v, direct error %v", s.Path, gerr, werr)
			continue
		}
		if gerr == nil && !reflect.DeepEqual(normal(got), normal(want)) {
			t.Errorf("%s: preview over the wire differs from a direct call:\n got %+v\nwant %+v", s.Path, got, want)
		}
	}
}

// normal makes empty and nil slices and maps alike, as the wire does.
func normal(r previewer.Response) previewer.Response {
	if len(r.Notes) == 0 {
		r.Notes = nil
	}
	bs := make([]previewer.Block, len(r.Blocks))
	for i, b := range r.Blocks {
		if b.Row != nil {
			row := *b.Row
			if len(row.Cells) == 0 {
				row.Cells = nil
			}
			if len(row.Formulas) == 0 {
				row.Formulas = nil
			}
			b.Row = &row
		}
		if b.Paragraph != nil && len(b.Paragraph.Runs) == 0 {
			p := *b.Paragraph
			p.Runs = nil
			b.Paragraph = &p
		}
		if b.Image != nil && len(b.Image.Metadata) == 0 {
			im := *b.Image
			im.Metadata = nil
			b.Image = &im
		}
		bs[i] = b
	}
	r.Blocks = bs
	return r
}
