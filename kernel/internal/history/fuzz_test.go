package history

import (
	"bytes"
	"testing"
)

// FuzzDecodeLine: DecodeLine never panics, and a line it accepts is exactly
// the canonical encoding of the entry it returns.
func FuzzDecodeLine(f *testing.F) {
	f.Add([]byte(`{"seq":1,"time":"2026-11-29T19:00:00Z","kind":"commit","data":{"n":1},"prev":"","sig":"` + zeroSig + `"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := DecodeLine(line)
		if err != nil {
			return
		}
		b, err := encodeLine(e)
		if err != nil {
			t.Fatalf("accepted line does not encode: %v", err)
		}
		if !bytes.Equal(b, line) {
			t.Fatalf("accepted line is not canonical:\n in  %q\n out %q", line, b)
		}
		if _, err := e.SigningBytes(); err != nil {
			t.Fatal(err)
		}
	})
}

const zeroSig = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=="
