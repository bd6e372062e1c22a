package acp

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadSteps: any steps.jsonl reads without a panic; every line that is
// not empty is either a step or counted as bad, and each step it reads
// encodes to a line that reads back as the same step.
func FuzzReadSteps(f *testing.F) {
	f.Add([]byte(`{"n":1,"session":"s1","id":"call_1","update":"tool_call","title":"Edit a.txt","kind":"edit","status":"completed","paths":["a.txt"],"started":"2026-01-02T03:04:05Z","ended":"2026-01-02T03:04:06Z","wrote":["a.txt"],"effects":[{"kind":"modify","path":"a.txt"}],"raw_input":{"path":"a.txt"}}` + "\n"))
	f.Add([]byte(`{"n":2,"update":"plan","raw":{"sessionUpdate":"plan","entries":[]}}` + "\n\n{not json\n"))
	f.Add([]byte(`{"n":3,"update":"tool_call","permission":[{"option":"allow_once"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), StepsFile)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		steps, bad, err := ReadSteps(path)
		if err != nil {
			return // a line longer than MaxLine: what was read before it is kept
		}
		lines := 0
		for _, l := range bytes.Split(b, []byte("\n")) {
			if len(bytes.TrimSuffix(l, []byte("\r"))) > 0 { // the scanner drops one \r before \n
				lines++
			}
		}
		if len(steps)+bad != lines {
			t.Fatalf("%d steps + %d bad lines, want %d lines", len(steps), bad, lines)
		}
		for _, s := range steps {
			line, err := json.Marshal(s)
			if err != nil {
				t.Fatalf("a step read back does not encode: %v (%+v)", err, s)
			}
			var again Step
			if err := json.Unmarshal(line, &again); err != nil {
				t.Fatalf("an encoded step does not decode: %v\n%s", err, line)
			}
			if line2, _ := json.Marshal(again); !bytes.Equal(line, line2) {
				t.Fatalf("round trip changed the step:\n%s\n%s", line, line2)
			}
		}
	})
}
