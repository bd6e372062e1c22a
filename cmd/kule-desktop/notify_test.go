package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestNoteFor(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		ev   string
		want *note
	}{
		"a question waits": {`{"type":"question","task":"1a2b","data":{"title":"Connect to a.org:443?","detail":"by  npm\ninstall","state":"waiting"}}`,
			&note{Summary: "Kule needs you: Connect to a.org:443?", Body: "by npm install"}},
		"a question answered": {`{"type":"question","data":{"title":"x","state":"approved"}}`, nil},
		"a run ends well":     {`{"type":"run","task":"1a2b","data":{"state":"end","command":"make","code":0}}`, &note{Summary: "Task 1a2b: make finished", Body: "its changes wait for review in the window"}},
		"a run exits 2":       {`{"type":"run","task":"1a2b","data":{"state":"end","command":"make","code":2}}`, &note{Summary: "Task 1a2b: make exited with 2"}},
		"an agent fails":      {`{"type":"run","task":"1a2b","data":{"state":"end","agent":"claude","error":"login needed"}}`, &note{Summary: "Task 1a2b: claude failed", Body: "login needed"}},
		"a run starts":        {`{"type":"run","data":{"state":"start","command":"make"}}`, nil},
		"output":              {`{"type":"output","data":"lots"}`, nil},
	} {
		t.Run(name, func(t *testing.T) {
			var got []note
			if err := readEvents(strings.NewReader("retry: 2000\n: kule events\n\nid: 1\nevent: x\ndata: "+tc.ev+"\n\n"), func(ev event) {
				if n, ok := noteFor(ev); ok {
					got = append(got, n)
				}
			}); err != nil {
				t.Fatal(err)
			}
			var want []note
			if tc.want != nil {
				want = []note{*tc.want}
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Fatal(d)
			}
		})
	}
}

func TestOneLineKeepsItShort(t *testing.T) {
	t.Parallel()
	if got := oneLine(strings.Repeat("é", 500), 10); got != strings.Repeat("é", 9)+"…" {
		t.Fatalf("%q", got)
	}
}

// FuzzReadEvents: any stream is read without a panic, and every event it
// gives was a data line of the stream.
func FuzzReadEvents(f *testing.F) {
	f.Add("data: {\"type\":\"run\"}\n\n")
	f.Add("data: {\"type\":\ndata: \"question\"}\n\n: ping\n\n")
	f.Add("event: x\n\n\n\ndata:\n\n")
	f.Fuzz(func(t *testing.T, s string) {
		_ = readEvents(strings.NewReader(s), func(ev event) {
			if n, ok := noteFor(ev); ok && strings.ContainsAny(n.Summary, "\n\r") {
				t.Fatalf("a notification of two lines: %q", n.Summary)
			}
		})
	})
}

// TestLoginPATH asks a real bash, as a launcher's kule-desktop does, with a
// profile that greets and adds a folder: the folder comes back, the
// greeting does not.
func TestLoginPATH(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".bash_profile"), []byte("echo hello there\nexport PATH=/opt/node/bin:$PATH\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home) // the shell's child reads it
	got := loginPATH(context.Background(), "/bin/bash", 20*time.Second)
	if !strings.HasPrefix(got, "/opt/node/bin:") || strings.Contains(got, "hello") {
		t.Fatalf("login PATH %q", got)
	}
	if got := loginPATH(context.Background(), filepath.Join(home, "no-shell"), time.Second); got != "" {
		t.Fatalf("a missing shell gave %q", got)
	}
	if got := mergePATH("/opt/node/bin:/usr/bin", "/usr/bin:/bin:"); got != "/opt/node/bin:/usr/bin:/bin" {
		t.Fatalf("merged %q", got)
	}
}
