package daemon

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadJSONLines: any steps.jsonl or network.jsonl reads without a
// panic into at most 500 lines, each of them valid JSON and a line of the
// file, the newest last.
func FuzzReadJSONLines(f *testing.F) {
	f.Add([]byte(`{"n":1,"command":"echo hi > a.txt","exit":0,"seconds":0.01}` + "\n" + `{"host":"example.com:443","verdict":"allow"}` + "\n"))
	f.Add([]byte("{not json\n\n[1,2]\r\n\"s\"\n"))
	f.Add(bytes.Repeat([]byte("{}\n"), 501))
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "steps.jsonl")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := readJSONLines(path)
		if err != nil {
			return // a line longer than the scanner's bound
		}
		if out == nil || len(out) > 500 {
			t.Fatalf("%d lines (nil %v), want a list of at most 500", len(out), out == nil)
		}
		var valid [][]byte
		for _, l := range bytes.Split(b, []byte("\n")) {
			if l = bytes.TrimSuffix(l, []byte("\r")); json.Valid(l) {
				valid = append(valid, l)
			}
		}
		if len(valid) > 500 {
			valid = valid[len(valid)-500:]
		}
		if len(out) != len(valid) {
			t.Fatalf("%d lines read, want the last %d valid ones", len(out), len(valid))
		}
		for i, l := range out {
			if !bytes.Equal(l, valid[i]) {
				t.Fatalf("line %d is %q, want %q", i, l, valid[i])
			}
		}
	})
}
