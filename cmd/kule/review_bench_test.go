package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/kulehq/kule/cmd/internal/daemon"
	"github.com/kulehq/kule/cmd/internal/daemon/client"
	"github.com/kulehq/kule/kernel"
)

// BenchmarkReviewRefresh measures a Review refresh as the app asks for it
// (GET /api/tasks/{id} over the daemon's socket: status, policy and the
// differs' names of a changed Go file and Markdown file) with the
// daemon's one shared plugin host, against its peer: a plugin host made
// (and its sandboxed differs started) for each refresh, as before. It
// reports the ratio.
func BenchmarkReviewRefresh(b *testing.B) {
	dir := b.TempDir()
	folder := filepath.Join(dir, "folder")
	os.MkdirAll(folder, 0o755)
	os.WriteFile(filepath.Join(folder, "main.go"), []byte("package main\n\nfunc a() {}\n\nfunc b() {}\n"), 0o644)
	os.WriteFile(filepath.Join(folder, "README.md"), []byte("# T\n\n## Use\n\nx\n"), 0o644)
	measure := func(name string, r daemon.DiffReviewer) time.Duration {
		k, err := kernel.New(kernel.Config{Home: filepath.Join(dir, name)})
		if err != nil {
			b.Fatal(err)
		}
		if r.Hosts != nil {
			r.Hosts = daemon.NewSharedHost(k.Store().Root, func() *kernel.PluginHost { return pluginHost(k.Store().Root) })
		} else {
			r.Open = func() *kernel.PluginHost { return pluginHost(k.Store().Root) }
		}
		d, err := daemon.Start(daemon.Config{Kernel: k, Idle: -1, Reviewer: r, Log: hclog.NewNullLogger()})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go d.Serve(ctx)
		defer d.Shutdown()
		rep, err := k.NewTask(context.Background(), folder)
		if err != nil {
			b.Fatal(err)
		}
		os.WriteFile(filepath.Join(rep.Task.Paths.Copy, "main.go"), []byte("package main\n\nfunc a() { println() }\n\nfunc c() {}\n"), 0o644)
		os.WriteFile(filepath.Join(rep.Task.Paths.Copy, "README.md"), []byte("# T\n\n## Use\n\ny\n"), 0o644)
		c := client.New(k.Store().Root)
		for deadline := time.Now().Add(30 * time.Second); !c.Running(ctx); {
			if time.Now().After(deadline) {
				b.Fatal("waited 30 s for the daemon to answer on its socket")
			}
			time.Sleep(10 * time.Millisecond)
		}
		var v struct {
			Changes []struct {
				Path  string
				Names []string
			}
		}
		get := func() {
			if err := c.Do(ctx, "GET", "/api/tasks/"+rep.Task.ID, nil, &v); err != nil {
				b.Fatal(err)
			}
		}
		get() // warm the caches (and, shared, start the differs once)
		named := 0
		for _, ch := range v.Changes {
			named += len(ch.Names)
		}
		if named == 0 {
			b.Fatalf("%s: the differs named nothing: %+v", name, v)
		}
		start := time.Now()
		for range b.N {
			get()
		}
		return time.Since(start) / time.Duration(b.N)
	}
	perRefresh := measure("per-refresh", daemon.DiffReviewer{})
	shared := measure("shared", daemon.DiffReviewer{Hosts: &daemon.SharedHost{}})
	b.ReportMetric(float64(perRefresh.Microseconds()), "host-per-refresh-µs/op")
	b.ReportMetric(float64(shared.Microseconds()), "shared-host-µs/op")
	b.ReportMetric(float64(shared)/float64(perRefresh), "ratio")
	fmt.Fprintf(os.Stderr, "review refresh: shared host %v, host per refresh %v, ratio %.3f\n", shared, perRefresh, float64(shared)/float64(perRefresh))
}
