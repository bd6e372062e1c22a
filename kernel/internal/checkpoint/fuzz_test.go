package checkpoint

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzDecodeRecord: DecodeRecord never panics; a record it accepts has only
// paths inside the folder and survives an encode/decode round trip.
func FuzzDecodeRecord(f *testing.F) {
	f.Add([]byte(`{"id":1,"time":"2026-11-29T19:00:00Z","commit":"c","items":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRecord(b)
		if err != nil {
			return
		}
		for _, it := range r.Items {
			if err := checkPath(it.Path); err != nil {
				t.Fatalf("accepted a bad path: %v", err)
			}
		}
		enc, err := marshalRecord(r)
		if err != nil {
			t.Fatalf("accepted record does not encode: %v", err)
		}
		r2, err := DecodeRecord(enc)
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v\n%s", err, enc)
		}
		if diff := cmp.Diff(r, r2); diff != "" {
			t.Fatalf("round trip changed the record:\n%s", diff)
		}
	})
}
