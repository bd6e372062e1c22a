package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestAgentPicturesFromTheApp: Ask now hands the daemon the places with the
// composed prompt; the picture regions among them are cut by the built-in
// picture previewer (out of process) and reach an agent that takes
// pictures as images of the regions' sizes; a region outside the picture
// starts no run.
func TestAgentPicturesFromTheApp(t *testing.T) {
	t.Parallel()
	k := newKernel(t)
	cfg := Config{Kernel: k, Previews: previewHost(t, k.Home())}
	withPeerScript(t, &cfg, "pictures", "")
	d := startDaemon(t, cfg)
	folder := filepath.Join(t.TempDir(), "folder")
	must(t, os.MkdirAll(folder, 0o755))
	var b bytes.Buffer
	must(t, png.Encode(&b, image.NewGray(image.Rect(0, 0, 40, 30))))
	must(t, os.WriteFile(filepath.Join(folder, "pic.png"), b.Bytes(), 0o644))
	must(t, os.WriteFile(filepath.Join(folder, "a.txt"), []byte("a\nb\n"), 0o644))
	rep, err := d.k.NewTask(context.Background(), folder)
	must(t, err)
	ch, stop := d.Bus.Subscribe()
	defer stop()
	var (
		mu   sync.Mutex
		text strings.Builder
	)
	go func() {
		for e := range ch {
			if e.Type != "agent" {
				continue
			}
			m := map[string]any{}
			raw, _ := json.Marshal(e.Data)
			json.Unmarshal(raw, &m)
			if s, ok := m["text"].(string); ok && m["type"] == "text" {
				mu.Lock()
				text.WriteString(s)
				mu.Unlock()
			}
		}
	}()
	places := []string{"a.txt:1", "pic.png:0,0-10,5", "pic.png:10,10-30,30", "pic.png:0,0-40,30", "pic.png:1,1-2,2"}
	tr, err := d.RunAgent(context.Background(), rep.Task, AgentRequest{Agent: "peer", Prompt: "look", Places: places})
	if err != nil || tr.StopReason != "end_turn" {
		t.Fatalf("run: %+v %v", tr, err)
	}
	want := "images: 10x5/<nil> 20x20/<nil> 40x30/<nil>"
	waitFor(t, "the agent's account of the images", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(text.String(), want)
	})
	if _, err := d.RunAgent(context.Background(), rep.Task, AgentRequest{Agent: "peer", Prompt: "look", Places: []string{"pic.png:0,0-41,30"}}); err == nil || !strings.Contains(err.Error(), "40×30") {
		t.Errorf("a region outside the picture: %v, want a refusal naming its size", err)
	}
}
