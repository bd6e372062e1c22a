package extension

import (
	"os"
	"regexp"
	"testing"
)

// TestProtocolVersion holds ProtocolVersion to extension.proto's
// "kule:protocol-version N" header and its package's vN.
func TestProtocolVersion(t *testing.T) {
	b, err := os.ReadFile("../proto/extension/v1/extension.proto")
	if err != nil {
		t.Fatal(err)
	}
	h := regexp.MustCompile(`(?m)^// kule:protocol-version (\d+)$`).FindSubmatch(b)
	p := regexp.MustCompile(`(?m)^package kule\.extension\.v(\d+);$`).FindSubmatch(b)
	if h == nil || p == nil || string(h[1]) != "1" || string(p[1]) != "1" || ProtocolVersion != 1 || Handshake().ProtocolVersion != 1 {
		t.Fatalf("header %q, package %q, Go %d", h, p, ProtocolVersion)
	}
}
