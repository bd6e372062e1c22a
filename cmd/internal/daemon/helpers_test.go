package daemon

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/kulehq/kule/cmd/internal/daemon/client"
	"github.com/kulehq/kule/kernel"
)

// newKernel opens a kernel on a fresh home.
func newKernel(t *testing.T) *kernel.Kernel {
	t.Helper()
	k, err := kernel.New(kernel.Config{Home: filepath.Join(t.TempDir(), "home")})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newKernelB(b *testing.B) *kernel.Kernel {
	k, err := kernel.New(kernel.Config{Home: filepath.Join(b.TempDir(), "home")})
	if err != nil {
		b.Fatal(err)
	}
	return k
}

func discardLog() hclog.Logger { return hclog.NewNullLogger() }

// sampleFolder makes a small folder with text and a picture.
func sampleFolder(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "project")
	must(t, os.MkdirAll(filepath.Join(dir, "notes"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("# Project\n\nHello.\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "notes", "plan.md"), []byte("# Plan\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "logo.png"), pngOf(t, 4, 3, 0), 0o644))
	return dir
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// startDaemon starts and serves a daemon; it stops when the test ends.
func startDaemon(t *testing.T, cfg Config) *Daemon {
	t.Helper()
	if cfg.Kernel == nil {
		cfg.Kernel = newKernel(t)
	}
	if cfg.Log == nil {
		cfg.Log = hclog.NewNullLogger()
	}
	if cfg.Idle == 0 {
		cfg.Idle = -1
	}
	d, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { d.Serve(ctx); close(served) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-served:
		case <-time.After(10 * time.Second):
			t.Error("daemon did not stop")
		}
	})
	c := client.New(d.home)
	for i := 0; !c.Running(context.Background()); i++ {
		if i > 1500 { // 30 s: only a broken daemon takes that long
			t.Fatal("daemon does not answer on its socket")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return d
}
