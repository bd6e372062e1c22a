package kernel_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/internal/proxy"
	"github.com/kulehq/kule/kernel/internal/runner"
)

// localModel is a model server on the host's loopback (Ollama, a LiteLLM
// gateway); it counts the requests it got.
func localModel(t *testing.T) (string, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Write([]byte("model-says-hi"))
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String(), &n
}

// A local model named with kule exec --allow-host, or remembered with kule
// rules allow, is reached from inside the sandbox through the task's
// proxy; another loopback port of the host stays out of reach, and every
// attempt is a line of network.jsonl.
func TestExecReachesANamedLocalModel(t *testing.T) {
	needRoot(t, "curl")
	f := newFixture(t, map[string]string{"a.txt": "a\n"})
	tk := f.newTask()
	named, hits := localModel(t)
	other, otherHits := localModel(t)
	exec := func(allow []string, url string) string {
		t.Helper()
		var spec runner.Spec
		r, err := kernel.SandboxRunner(f.k.Store().Root, tk, &spec, kernel.SandboxOptions{Warn: &strings.Builder{}})
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		spec.Stdout, spec.Stderr = &out, os.Stderr
		kk := f.k.With(kernel.RunHooks{Runner: r})
		if _, _, err := kk.Exec(context.Background(), tk, kernel.ExecOptions{Args: []string{"curl", "-s", "--max-time", "20", url}, Spec: spec, AllowHosts: allow}); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	if got := exec([]string{named}, "http://"+named+"/api/tags"); got != "model-says-hi" || hits.Load() != 1 {
		t.Fatalf("--allow-host %s: got %q (%d requests at the model)", named, got, hits.Load())
	}
	_, port, _ := net.SplitHostPort(named)
	if got := exec([]string{named}, "http://localhost:"+port+"/api/tags"); strings.Contains(got, "model-says-hi") || hits.Load() != 1 {
		t.Fatalf("localhost:%s is not what was named (127.0.0.1:%s): got %q", port, port, got)
	}
	if got := exec([]string{named}, "http://"+other+"/"); strings.Contains(got, "model-says-hi") || otherHits.Load() != 0 {
		t.Fatalf("a loopback port nobody named was reached: %q", got)
	}
	// Remembered: no flag needed any more.
	if _, err := kernel.AllowHost(f.k.Store().Root, f.folder, "localhost:"+port); err != nil {
		t.Fatal(err)
	}
	if got := exec(nil, "http://localhost:"+port+"/api/tags"); got != "model-says-hi" || hits.Load() != 2 {
		t.Fatalf("a remembered localhost:%s: got %q", port, got)
	}
	es, err := proxy.ReadLog(tk.Paths.Dir + "/network.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range es {
		got = append(got, e.Host+" "+e.Verdict+" named="+boolWord(e.Named)+" loopback="+boolWord(e.Loopback)+" err="+boolWord(e.Error != ""))
	}
	h, _, _ := net.SplitHostPort(other)
	want := []string{
		h + " forwarded named=yes loopback=yes err=no",
		"localhost refused named=no loopback=yes err=no",
		h + " refused named=no loopback=yes err=no",
		"localhost forwarded named=yes loopback=yes err=no",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("network.jsonl:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func boolWord(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
