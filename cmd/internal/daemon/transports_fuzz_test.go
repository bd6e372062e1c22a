package daemon

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzParseLaunch: a launching message either names a folder — then it is
// ~ or absolute, it begins the message and the prompt is the rest — or it
// is all prompt for the default folder.
func FuzzParseLaunch(f *testing.F) {
	for _, s := range []string{"~/notes: tidy the drafts", "/srv/data:count rows", "tidy: the drafts", "~: look", " ~/a b: c", "http://x: y", "", ":"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		folder, prompt := ParseLaunch(text, "DEF")
		if prompt != strings.TrimSpace(prompt) {
			t.Fatalf("prompt %q is not trimmed", prompt)
		}
		if folder == "DEF" {
			if prompt != strings.TrimSpace(text) {
				t.Fatalf("with the default folder the prompt %q is not the message %q", prompt, text)
			}
			return
		}
		if !strings.HasPrefix(folder, "~") && !strings.HasPrefix(folder, "/") {
			t.Fatalf("folder %q from %q is neither ~ nor absolute", folder, text)
		}
		if strings.ContainsAny(folder, ": \t\n") || prompt == "" || !strings.HasPrefix(strings.TrimSpace(text), folder) {
			t.Fatalf("ParseLaunch(%q) = %q, %q", text, folder, prompt)
		}
	})
}

func TestParseLaunch(t *testing.T) {
	t.Parallel()
	for text, want := range map[string][2]string{
		"~/notes: tidy the drafts": {"~/notes", "tidy the drafts"},
		"/srv/data : count rows":   {"/srv/data", "count rows"},
		"tidy: the drafts":         {"DEF", "tidy: the drafts"},
		"http://x: y":              {"DEF", "http://x: y"},
		"~/a: first\nsecond":       {"~/a", "first\nsecond"},
	} {
		f, p := ParseLaunch(text, "DEF")
		if f != want[0] || p != want[1] {
			t.Errorf("ParseLaunch(%q) = %q, %q; want %q", text, f, p, want)
		}
	}
}

// FuzzDecodeThreads: a transports/<name>.json either is refused or reads
// to threads that write back and read the same, each task id 8 hex
// characters and each thread one task's.
func FuzzDecodeThreads(f *testing.F) {
	f.Add([]byte(`{"threads":{"0badc0de":{"thread":"1700000000.000001","channel":"C1","agent":"peer"}}}`))
	f.Add([]byte(`{"threads":{"0badc0de":{"thread":"t"},"1badc0de":{"thread":"t"}}}`))
	f.Add([]byte(`{"threads":{"../../x":{"thread":"t"}}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ts, err := DecodeThreads(b)
		if err != nil {
			return
		}
		again, err := json.Marshal(threadsFile{Threads: ts})
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeThreads(again)
		if err != nil || len(back) != len(ts) {
			t.Fatalf("what was read does not read back: %v", err)
		}
		for id, p := range ts {
			if !taskIDPattern().MatchString(id) || back[id] != p {
				t.Fatalf("task %q: %+v then %+v", id, p, back[id])
			}
		}
	})
}
