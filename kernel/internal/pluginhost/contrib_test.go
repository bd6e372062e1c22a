package pluginhost

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kulehq/kule/sdk/previewer"
)

// TestExampleDiffer takes contrib/example-differ the way a person would:
// build it with its build.sh, install it, see it refused before approval,
// approve it, get names from it, and see it refused again once its binary
// changes.
func TestExampleDiffer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example differ; skipped with -short")
	}
	if _, err := exec.LookPath("go"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("go is not on PATH")
		}
		t.Skip("go is not on PATH")
	}
	out := filepath.Join(t.TempDir(), "out")
	build := exec.Command("bash", filepath.Join("..", "..", "..", "contrib", "example-differ", "build.sh"), out)
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build.sh: %v\n%s", err, b)
	}
	h := newHost(t)
	ctx := context.Background()
	m, err := h.Install(out)
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "ini" {
		t.Fatalf("installed %q", m.Name)
	}
	if _, err := h.get(ctx, "differ", "ini", false); !errors.Is(err, ErrNotApproved) {
		t.Fatalf("start before approval = %v, want ErrNotApproved", err)
	}
	if _, err := h.Approve("ini"); err != nil {
		t.Fatal(err)
	}
	// As Kule runs it: in the sandbox (a real third-party binary, not
	// this test binary standing in for one).
	opts := h.opts
	opts.CmdFactory = nil
	if sandboxOK() {
		opts.Sandbox = nil
	} else {
		t.Log("the sandbox is not available here; the example runs unsandboxed")
		opts.CmdFactory = DirectCmd
	}
	h2 := New(h.home, opts)
	t.Cleanup(h2.Close)
	d := h2.DifferFor(ctx, "conf/app.ini")
	if d == nil || d.Name() != "ini" {
		t.Fatalf("DifferFor = %v, want ini", d)
	}
	es, err := d.Entities(ctx, "conf/app.ini", []byte("[server]\nport = 80\n"))
	if err != nil || len(es) != 2 || es[1].ID() != "key server.port" {
		t.Fatalf("entities = %+v, %v", es, err)
	}
	if _, err := d.Merge(ctx, "conf/app.ini", nil, nil, nil); err == nil || !strings.Contains(err.Error(), "not implemented") {
		t.Errorf("merge = %v, want not implemented (the example has no Merger)", err)
	}
	h2.Close()

	exe := filepath.Join(writable(t, h, "ini"), m.Executable)
	f, err := os.OpenFile(exe, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("changed"))
	f.Close()
	h3 := New(h.home, h.opts)
	t.Cleanup(h3.Close)
	if _, err := h3.get(ctx, "differ", "ini", false); !errors.Is(err, ErrNotApproved) || !strings.Contains(err.Error(), "executable changed since approval") {
		t.Fatalf("start after the binary changed = %v, want ErrNotApproved saying why", err)
	}
	if d := h3.DifferFor(ctx, "conf/app.ini"); d != nil {
		t.Fatalf("DifferFor chose the changed plugin: %v", d)
	}
}

// TestExamplePreviewer takes contrib/example-previewer the way a person
// would: build it with its build.sh, install it, see it refused before
// approval, approve it, and preview a file with it in the sandbox.
func TestExamplePreviewer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example previewer; skipped with -short")
	}
	if _, err := exec.LookPath("go"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("go is not on PATH")
		}
		t.Skip("go is not on PATH")
	}
	out := filepath.Join(t.TempDir(), "out")
	build := exec.Command("bash", filepath.Join("..", "..", "..", "contrib", "example-previewer", "build.sh"), out)
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build.sh: %v\n%s", err, b)
	}
	h := newHost(t)
	ctx := context.Background()
	m, err := h.Install(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.get(ctx, "previewer", m.Name, false); !errors.Is(err, ErrNotApproved) {
		t.Fatalf("start before approval = %v, want ErrNotApproved", err)
	}
	if p := h.PreviewerFor(ctx, "conf/app.ini"); p != nil {
		t.Fatalf("an unapproved previewer was chosen: %v", p)
	}
	if _, err := h.Approve(m.Name); err != nil {
		t.Fatal(err)
	}
	opts := h.opts
	opts.CmdFactory = nil
	if sandboxOK() {
		opts.Sandbox = nil
	} else {
		t.Log("the sandbox is not available here; the example runs unsandboxed")
		opts.CmdFactory = DirectCmd
	}
	h2 := New(h.home, opts)
	t.Cleanup(h2.Close)
	p := h2.PreviewerFor(ctx, "conf/app.ini")
	if p == nil || p.Name() != "ini-preview" || p.Builtin() {
		t.Fatalf("PreviewerFor = %v, want ini-preview", p)
	}
	r, err := p.Preview(ctx, previewer.Request{Path: "conf/app.ini", Content: []byte("[server]\nport = 80\n")})
	if err != nil || len(r.Blocks) != 2 || r.Blocks[0].Heading.Text != "server" || r.Blocks[1].Row.Cells[1] != "80" {
		t.Fatalf("preview = %+v, %v", r, err)
	}
}
