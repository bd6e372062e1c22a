package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/sdk/extension"
	sdkplugin "github.com/kulehq/kule/sdk/plugin"
)

// installExample packs, installs and approves one of extensions/examples
// into home.
func installExample(b *testing.B, home, name string) string {
	b.Helper()
	data, pkg, err := extension.Pack(filepath.Join("..", "..", "extensions", "examples", name))
	if err != nil {
		b.Fatal(err)
	}
	s := kernel.NewExtensionStore(home)
	if _, err := s.Install(data); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Approve(pkg.Manifest.ID, ""); err != nil {
		b.Fatal(err)
	}
	return pkg.Manifest.ID
}

// BenchmarkExtHostStart measures starting the extension host and loading
// an extension in it (the hello-panel example), each way Kule does it,
// against its peer, starting the built-in text differ in the same sandbox
// through the same plugin host (`kule-plugins __plugin differ/text`, handshake
// only). It reports, each in ms:
//
//   - ext-start+load: what the CLI pays (kule ext run, kule status): read
//     and check the package against its approval, start `kule-plugins __plugin
//     extension/host` in the plugin sandbox, handshake, make the runtime,
//     run main.js;
//   - launch-sandboxed: the host's start alone, in the sandbox;
//   - launch-bare: the same binary and handshake with no sandbox, so
//     launch-sandboxed minus launch-bare is the sandbox's part;
//   - exec-only: the binary started and ended with nothing to serve (`kule
//     __plugin none/none`), so launch-bare minus exec-only is go-plugin's
//     handshake (its mutual TLS included);
//   - daemon-first-use: what the daemon's pool pays the first time an
//     extension is used, its spare host started ahead: read and check the
//     package, load it, run a command;
//   - daemon-kept-use: the next command, in the host it kept;
//   - differ-start: the peer.
//
// ratio is daemon-first-use over differ-start.
func BenchmarkExtHostStart(b *testing.B) {
	home := b.TempDir()
	k, err := kernel.New(kernel.Config{Home: home})
	if err != nil {
		b.Fatal(err)
	}
	id := installExample(b, home, "hello-panel")
	r := extRunner(k, home, io.Discard)
	ph := pluginHost(home)
	bare := kernel.ExtensionHostLauncher(kernel.NewPluginHost(home, kernel.PluginHostOptions{Builtins: builtinPlugins(), Logger: kernelLogger(),
		CmdFactory: func(_ context.Context, spec kernel.PluginLaunchSpec) (*exec.Cmd, error) {
			return &exec.Cmd{Path: spec.Path, Args: spec.Args}, nil
		}}))
	hs, _ := sdkplugin.Handshake(sdkplugin.KindDiffer)
	var ext, sandboxed, bareT, execT, first, kept, differ time.Duration
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	greet := func(x *kernel.RunningExtension) error {
		v, err := x.Run(ctx, "greet", json.RawMessage(`["Ada"]`))
		if err == nil && string(v) != `"Hello, Ada!"` {
			err = fmt.Errorf("greet = %s", v)
		}
		return err
	}
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		x, err := r.Start(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		ext += time.Since(t0)
		x.Close()

		for _, l := range []struct {
			launch func(context.Context) (*extension.HostClient, func(), error)
			into   *time.Duration
		}{{r.Launch, &sandboxed}, {bare, &bareT}} {
			t0 = time.Now()
			_, kill, err := l.launch(ctx)
			if err != nil {
				b.Fatal(err)
			}
			*l.into += time.Since(t0)
			kill()
		}

		t0 = time.Now()
		if err := exec.Command(self, "__plugin", "none/none").Run(); err == nil {
			b.Fatal("kule-plugins __plugin none/none served something")
		}
		execT += time.Since(t0)

		pool := &kernel.ExtensionPool{Runner: r}
		pool.Warm()
		if !pool.Ready(ctx) {
			b.Fatal("the pool started no spare host")
		}
		t0 = time.Now()
		if _, err := pool.Use(ctx, id, greet); err != nil {
			b.Fatal(err)
		}
		first += time.Since(t0)
		t0 = time.Now()
		if _, err := pool.Use(ctx, id, greet); err != nil {
			b.Fatal(err)
		}
		kept += time.Since(t0)
		pool.Close()

		t0 = time.Now()
		st, err := ph.StartBuiltin(ctx, sdkplugin.KindDiffer, "text", hs, goplugin.PluginSet{sdkplugin.KindDiffer: &sdkplugin.DifferPlugin{}}, nil)
		if err != nil {
			b.Fatal(err)
		}
		differ += time.Since(t0)
		st.Kill()
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(ms(ext), "ms/ext-start+load")
	b.ReportMetric(ms(sandboxed), "ms/launch-sandboxed")
	b.ReportMetric(ms(bareT), "ms/launch-bare")
	b.ReportMetric(ms(execT), "ms/exec-only")
	b.ReportMetric(ms(first), "ms/daemon-first-use")
	b.ReportMetric(ms(kept), "ms/daemon-kept-use")
	b.ReportMetric(ms(differ), "ms/differ-start")
	b.ReportMetric(float64(first)/float64(differ), "ratio")
}

// BenchmarkExtReviewNotes measures what the review-notes hooks add to kule
// status on a task of 1,000 added files: the skeleton's hook (kule ext
// new), its host started in the sandbox and handed the 1,000 effects
// (ms/notes; ms/hook-in-running-host is the call alone, in a host already
// running; ms/hook-through-daemon-pool is what the daemon's review pays,
// its host kept by the pool, the first use's load included), against its peer, the task's status itself (the walk that
// finds the effects). It reports them and the ratio of notes to status.
func BenchmarkExtReviewNotes(b *testing.B) {
	dir := b.TempDir()
	home := filepath.Join(dir, "home")
	k, err := kernel.New(kernel.Config{Home: home})
	if err != nil {
		b.Fatal(err)
	}
	src := filepath.Join(dir, "me.notes")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "extension.json"), []byte(`{"id":"me.notes","name":"Notes","version":"0.1.0","permissions":["review.read","review.notes"],"review_notes":true}`), 0o644)
	os.WriteFile(filepath.Join(src, "main.js"), []byte(`kule.review.onNotes((review) => review.effects
  .filter((e) => e.kind === 'add' && /todo/i.test(e.path))
  .map((e) => ({ path: e.path, text: 'this adds a TODO file' })));`), 0o644)
	data, _, err := extension.Pack(src)
	if err != nil {
		b.Fatal(err)
	}
	s := kernel.NewExtensionStore(home)
	s.Install(data)
	s.Approve("me.notes", "")
	folder := filepath.Join(dir, "folder")
	os.MkdirAll(folder, 0o755)
	os.WriteFile(filepath.Join(folder, "keep.txt"), []byte("x"), 0o644)
	rep, err := k.NewTask(context.Background(), folder)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 1000; i++ {
		name := fmt.Sprintf("f%04d.txt", i)
		if i%10 == 0 {
			name = fmt.Sprintf("todo%04d.txt", i)
		}
		os.WriteFile(filepath.Join(rep.Task.Paths.Copy, name), []byte("x\n"), 0o644)
	}
	ctx := context.Background()
	var notesT, statusT, hookT time.Duration
	var n int
	r := extRunner(k, home, os.Stderr)
	x, err := r.Start(ctx, "me.notes")
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	pool := &kernel.ExtensionPool{Runner: r}
	defer pool.Close()
	var poolT time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		st, err := k.Status(ctx, rep.Task)
		if err != nil {
			b.Fatal(err)
		}
		statusT += time.Since(t0)
		t0 = time.Now()
		notes, warnings := reviewNotes(ctx, k, st, kernel.Names{})
		notesT += time.Since(t0)
		if len(warnings) > 0 || len(st.Effects) != 1000 {
			b.Fatalf("%d effects, warnings %v", len(st.Effects), warnings)
		}
		n = len(notes)
		t0 = time.Now()
		if _, _, err := x.ReviewNotes(ctx, kernel.ExtensionReviewOf(st, nil)); err != nil {
			b.Fatal(err)
		}
		hookT += time.Since(t0)
		t0 = time.Now()
		if _, err := pool.Use(ctx, "me.notes", func(x *kernel.RunningExtension) error {
			_, _, err := x.ReviewNotes(ctx, kernel.ExtensionReviewOf(st, nil))
			return err
		}); err != nil {
			b.Fatal(err)
		}
		poolT += time.Since(t0)
	}
	if n != 100 {
		out, _ := json.Marshal(n)
		b.Fatalf("notes: %s", out)
	}
	b.ReportMetric(float64(notesT.Microseconds())/1000/float64(b.N), "ms/notes")
	b.ReportMetric(float64(hookT.Microseconds())/1000/float64(b.N), "ms/hook-in-running-host")
	b.ReportMetric(float64(poolT.Microseconds())/1000/float64(b.N), "ms/hook-through-daemon-pool")
	b.ReportMetric(float64(statusT.Microseconds())/1000/float64(b.N), "ms/status")
	b.ReportMetric(float64(notesT)/float64(statusT), "ratio")
}
