package plugin

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// TestProtocolVersions holds the Go constants to the .proto files: the
// "kule:protocol-version N" header and the vN of the proto package name.
func TestProtocolVersions(t *testing.T) {
	tests := map[string]struct {
		proto string
		pkg   string
		goVer int
	}{
		KindDiffer:    {"differ/v1/differ.proto", "kule.differ.v", DifferProtocolVersion},
		KindPreviewer: {"previewer/v1/previewer.proto", "kule.previewer.v", PreviewerProtocolVersion},
		KindTransport: {"transport/v1/transport.proto", "kule.transport.v", TransportProtocolVersion},
	}
	header := regexp.MustCompile(`^// kule:protocol-version (\d+)$`)
	for kind, tc := range tests {
		t.Run(kind, func(t *testing.T) {
			f, err := os.Open(filepath.Join("..", "proto", tc.proto))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			sc := bufio.NewScanner(f)
			headerVer, pkgVer := -1, -1
			pkgRe := regexp.MustCompile(`^package ` + regexp.QuoteMeta(tc.pkg) + `(\d+);$`)
			for sc.Scan() {
				if m := header.FindStringSubmatch(sc.Text()); m != nil && headerVer < 0 {
					headerVer, _ = strconv.Atoi(m[1])
				}
				if m := pkgRe.FindStringSubmatch(sc.Text()); m != nil {
					pkgVer, _ = strconv.Atoi(m[1])
				}
			}
			if headerVer != tc.goVer || pkgVer != tc.goVer {
				t.Errorf("%s: header version %d, package version %d; Go constant %d", tc.proto, headerVer, pkgVer, tc.goVer)
			}
			if v, err := ProtocolVersion(kind); err != nil || v != tc.goVer {
				t.Errorf("ProtocolVersion(%q) = %d, %v", kind, v, err)
			}
			hs, err := Handshake(kind)
			if err != nil || int(hs.ProtocolVersion) != tc.goVer || hs.MagicCookieKey != MagicCookieKey || hs.MagicCookieValue != MagicCookieValue {
				t.Errorf("Handshake(%q) = %+v, %v", kind, hs, err)
			}
		})
	}
	if _, err := Handshake("nonsense"); err == nil {
		t.Errorf("Handshake of an unknown kind: want an error")
	}
}
