package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	sdkplugin "github.com/kulehq/kule/sdk/plugin"
	"github.com/kulehq/kule/sdk/plugintls"
	"github.com/kulehq/kule/sdk/previewer"
)

// servePreviewer serves a fake previewer whose behaviour is picked by its
// mode: it numbers the lines of *.note files, and misbehaves on purpose when
// the bytes say "bad".
func servePreviewer(mode string) {
	hs, _ := sdkplugin.Handshake(sdkplugin.KindPreviewer)
	plugintls.Serve(sdkplugin.PreviewerServeConfig(fakePreviewer{mode: mode}, hs))
}

type fakePreviewer struct{ mode string }

func (f fakePreviewer) Name() string          { return f.mode }
func (f fakePreviewer) Accepts(p string) bool { return strings.HasSuffix(p, ".note") }
func (f fakePreviewer) Preview(_ context.Context, req previewer.Request) (previewer.Response, error) {
	bad := strings.Contains(string(req.Content), "bad")
	switch {
	case bad && f.mode == "prevcrash":
		os.Exit(3)
	case bad && f.mode == "prevhang":
		for {
			time.Sleep(time.Hour)
		}
	case bad && f.mode == "prevgarbage":
		return previewer.Response{Kind: "text", Blocks: []previewer.Block{{Heading: &previewer.Heading{Level: 9, Text: "too deep"}}}}, nil
	case bad && f.mode == "prevflood":
		bs := make([]previewer.Block, req.Limit()+1)
		for i := range bs {
			bs[i].Line = &previewer.Line{Number: i + 1, Text: "x"}
		}
		return previewer.Response{Kind: "text", Blocks: bs}, nil
	case bad:
		return previewer.Response{}, fmt.Errorf("%w: a bad note", previewer.ErrCannotPreview)
	}
	var bs []previewer.Block
	for i, l := range strings.Split(strings.TrimSuffix(string(req.Content), "\n"), "\n") {
		bs = append(bs, previewer.Block{Line: &previewer.Line{Number: i + 1, Text: l}})
	}
	return previewer.Response{Kind: "text", Blocks: bs}, nil
}

func notePreviewer(name string) Builtin {
	return Builtin{Kind: "previewer", Name: name, Accepts: func(p string) bool { return strings.HasSuffix(p, ".note") }}
}

// TestBuiltinPreviewerOutOfProcess: a built-in previewer runs as its own
// process and its answer comes back whole.
func TestBuiltinPreviewerOutOfProcess(t *testing.T) {
	h := newHost(t, txtBuiltin("prevtxt"), notePreviewer("prevok"))
	ctx := context.Background()
	if p := h.PreviewerFor(ctx, "a.txt"); p != nil {
		t.Fatalf("a differ answered as a previewer: %v", p)
	}
	p := h.PreviewerFor(ctx, "a.note")
	if p == nil || p.Name() != "prevok" || !p.Builtin() {
		t.Fatalf("PreviewerFor = %v", p)
	}
	r, err := p.Preview(ctx, previewer.Request{Path: "a.note", Content: []byte("one\ntwo\n")})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Blocks) != 2 || r.Blocks[1].Line.Text != "two" || r.Blocks[1].Line.Number != 2 {
		t.Fatalf("blocks = %+v", r.Blocks)
	}
	if p, _ := h.get(ctx, "previewer", "prevok", true); p == nil || p.client.Exited() || p.previewer == nil {
		t.Fatal("the previewer does not run as a process of its own")
	}
}

// TestMisbehavingPreviewers: a previewer that crashes, hangs, answers
// garbage or more blocks than asked costs that one file, and the next file
// still previews; a refusal is the file's ErrCannotPreview.
func TestMisbehavingPreviewers(t *testing.T) {
	tests := map[string]error{
		"prevcrash":   ErrCall,
		"prevhang":    ErrCall,
		"prevgarbage": ErrGarbage,
		"prevflood":   ErrGarbage,
		"prevrefuse":  previewer.ErrCannotPreview,
	}
	for mode, want := range tests {
		t.Run(mode, func(t *testing.T) {
			h := newHost(t)
			if _, err := h.Install(makePlugin(t, mode, func(m *Manifest) {
				m.Kind = "previewer"
				m.Differ = DifferConfig{}
				m.Previewer = DifferConfig{Patterns: []string{"*.note"}}
			})); err != nil {
				t.Fatal(err)
			}
			if _, err := h.Approve(mode); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			p := h.PreviewerFor(ctx, "a.note")
			if p == nil || p.Name() != mode || p.Builtin() {
				t.Fatalf("PreviewerFor = %v", p)
			}
			_, err := p.Preview(ctx, previewer.Request{Path: "bad.note", Content: []byte("bad\n"), MaxBlocks: 10})
			if !errors.Is(err, want) {
				t.Fatalf("preview of the bad file = %v, want %v", err, want)
			}
			r, err := p.Preview(ctx, previewer.Request{Path: "good.note", Content: []byte("fine\n")})
			if err != nil || len(r.Blocks) != 1 {
				t.Fatalf("preview of the next file = %+v, %v", r, err)
			}
		})
	}
}

// TestPreviewerManifest: a previewer names its files in [previewer], never
// in [differ], and a differ's manifest cannot carry a [previewer] section.
func TestPreviewerManifest(t *testing.T) {
	sum := strings.Repeat("a", 64)
	ok := "name = \"p\"\nkind = \"previewer\"\nversion = \"1.0.0\"\nsha256 = \"" + sum + "\"\n[previewer]\npatterns = [\"*.note\"]\n"
	m, err := ParseManifest([]byte(ok))
	if err != nil || !m.Matches("x/a.note") || m.Matches("a.txt") {
		t.Fatalf("ParseManifest = %+v, %v", m, err)
	}
	for name, bad := range map[string]string{
		"no patterns":         "name = \"p\"\nkind = \"previewer\"\nversion = \"1.0.0\"\nsha256 = \"" + sum + "\"\n",
		"differ section":      "name = \"p\"\nkind = \"previewer\"\nversion = \"1.0.0\"\nsha256 = \"" + sum + "\"\n[differ]\npatterns = [\"*.note\"]\n",
		"differ w/ previewer": "name = \"p\"\nkind = \"differ\"\nversion = \"1.0.0\"\nsha256 = \"" + sum + "\"\n[differ]\npatterns = [\"*.a\"]\n[previewer]\npatterns = [\"*.note\"]\n",
		"network":             "name = \"p\"\nkind = \"previewer\"\nversion = \"1.0.0\"\nsha256 = \"" + sum + "\"\npermissions = [\"network:example.com\"]\n[previewer]\npatterns = [\"*.note\"]\n",
	} {
		if _, err := ParseManifest([]byte(bad)); !errors.Is(err, ErrManifest) {
			t.Errorf("%s: ParseManifest = %v, want ErrManifest", name, err)
		}
	}
}

// BenchmarkPreviewerCall measures the per-call cost of a preview through
// the previewer's plugin process (gRPC over a Unix socket with mTLS),
// unsandboxed and in the sandbox, against the named peer, the same
// previewer called in this process, on the same 40-line file, in one loop.
// Goal: under 1 ms of overhead per call.
func BenchmarkPreviewerCall(b *testing.B) {
	ctx := context.Background()
	direct := newHost(b, notePreviewer("prevok"))
	boxed := sandboxedHost(b, "", notePreviewer("prevok"))
	var sb strings.Builder
	for i := range 40 {
		fmt.Fprintf(&sb, "w%02d another line of text\n", i)
	}
	req := previewer.Request{Path: "a.note", Content: []byte(sb.String())}
	pd, pb := direct.PreviewerFor(ctx, "a.note"), boxed.PreviewerFor(ctx, "a.note")
	for _, p := range []*Previewer{pd, pb} {
		if _, err := p.Preview(ctx, req); err != nil { // start it
			b.Fatal(err)
		}
	}
	local := fakePreviewer{mode: "prevok"}
	b.ResetTimer()
	var inproc, plain, sandboxed time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := local.Preview(ctx, req); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := pd.Preview(ctx, req); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if _, err := pb.Preview(ctx, req); err != nil {
			b.Fatal(err)
		}
		sandboxed += time.Since(t2)
		plain += t2.Sub(t1)
		inproc += t1.Sub(t0)
	}
	n := float64(b.N)
	b.ReportMetric(float64(inproc.Nanoseconds())/n, "ns-inproc/call")
	b.ReportMetric(float64(plain.Nanoseconds())/n, "ns-plugin/call")
	b.ReportMetric(float64(sandboxed.Nanoseconds())/n, "ns-sandboxed/call")
	b.ReportMetric((sandboxed-inproc).Seconds()*1e6/n, "µs-overhead-sandboxed/call")
}

// TestLargeFileCrossesTheWire: a file larger than gRPC's default message
// size of 4 MiB, and its answer of the same size, cross the process
// boundary whole (the host previews files of up to 16 MiB).
func TestLargeFileCrossesTheWire(t *testing.T) {
	h := newHost(t, notePreviewer("prevok"))
	ctx := context.Background()
	p := h.PreviewerFor(ctx, "big.note")
	if p == nil {
		t.Fatal("no previewer for big.note")
	}
	line := strings.Repeat("x", 1<<20)
	src := strings.Repeat(line+"\n", 10)
	r, err := p.Preview(ctx, previewer.Request{Path: "big.note", Content: []byte(src)})
	if err != nil {
		t.Fatalf("preview of a %d MiB file: %v", len(src)>>20, err)
	}
	if len(r.Blocks) != 10 || r.Blocks[9].Line.Text != line {
		t.Fatalf("%d blocks came back", len(r.Blocks))
	}
}
