package pluginhost

// The fake plugins of these tests are this test binary run again, the way
// go-plugin's own tests fake plugins: TestMain sees Kule's magic cookie (or
// `__plugin <kind>/<name>` for a built-in) and serves a differ whose
// behaviour is picked by the plugin's name — the directory it was installed
// in, or the built-in's name. Every start writes a marker file first, so a
// test can prove a binary was never executed.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/kulehq/kule/sdk/differ"
	sdkplugin "github.com/kulehq/kule/sdk/plugin"
	"github.com/kulehq/kule/sdk/plugintls"
)

func TestMain(m *testing.M) {
	if len(os.Args) == 4 && os.Args[1] == "__plugin" && os.Args[2] == ConfineArg {
		os.Exit(ConfineMain(os.Args[3]))
	}
	if len(os.Args) > 2 && os.Args[1] == "__plugin" {
		_, name, _ := strings.Cut(os.Args[2], "/")
		servePlugin(name)
		os.Exit(0)
	}
	if os.Getenv(sdkplugin.MagicCookieKey) != "" || os.Getenv("KULE_TEST_PLUGIN_BY_HAND") != "" {
		servePlugin(filepath.Base(filepath.Dir(os.Args[0])))
		os.Exit(0)
	}
	code := m.Run()
	os.RemoveAll(markerDir(os.Getpid()))
	os.Exit(code)
}

// markerDir is where fake plugins leave a file per start; it is keyed by the
// test process (the plugin's parent) so parallel test runs do not meet.
func markerDir(pid int) string {
	return filepath.Join("/tmp", fmt.Sprintf("kule-pluginhost-markers-%d", pid))
}

func servePlugin(mode string) {
	dir := markerDir(os.Getppid())
	_ = os.MkdirAll(dir, 0o700)
	_ = os.WriteFile(filepath.Join(dir, mode), []byte(os.Args[0]), 0o600)
	if strings.HasPrefix(mode, "prev") {
		servePreviewer(mode)
		return
	}
	if strings.HasPrefix(mode, "chat") {
		serveTransport(mode)
		return
	}
	hs, _ := sdkplugin.Handshake(sdkplugin.KindDiffer)
	switch mode {
	case "badcookie":
		hs.MagicCookieValue = "not-kule"
	case "badversion":
		hs.ProtocolVersion = 99
	}
	var d differ.Differ = fakeDiffer{mode: mode}
	if mode == "merger" {
		d = fakeMerger{fakeDiffer{mode: mode}}
	}
	cfg := sdkplugin.DifferServeConfig(d, hs)
	switch mode {
	case "legacy": // built against an sdk before sdk/plugintls: go-plugin's own AutoMTLS
		goplugin.Serve(cfg)
	case "impostor", "unpinned":
		serveAttacker(mode, cfg)
	default:
		plugintls.Serve(cfg)
	}
}

// fakeDiffer names the lines of *.txt files ("line <first word>") and
// misbehaves on purpose when the bytes say so, in the modes that do.
type fakeDiffer struct{ mode string }

func (f fakeDiffer) Name() string { return f.mode }
func (f fakeDiffer) Accepts(p string) bool {
	return strings.HasSuffix(p, ".txt") || strings.HasSuffix(p, ".ini")
}

func (f fakeDiffer) Entities(_ context.Context, req differ.EntitiesRequest) (differ.EntitiesResponse, error) {
	return differ.EntitiesResponse{Entities: f.entities(req.Content)}, nil
}

func (f fakeDiffer) entities(src []byte) []differ.Entity {
	switch {
	case f.mode == "crash" && strings.Contains(string(src), "boom"):
		os.Exit(3)
	case f.mode == "hang" && strings.Contains(string(src), "hang"):
		for { // ignores its context, as a stuck plugin would
			time.Sleep(time.Hour)
		}
	case f.mode == "garbage":
		return []differ.Entity{{Kind: "func", Name: "x", Start: -4, End: 1 << 40}}
	case f.mode == "panic" && strings.Contains(string(src), "boom"):
		panic("boom")
	case f.mode == "attacker":
		return attack(src)
	}
	var out []differ.Entity
	off := 0
	for _, line := range strings.SplitAfter(string(src), "\n") {
		if w := strings.Fields(line); len(w) > 0 {
			out = append(out, differ.Entity{Kind: "line", Name: w[0], Start: off, End: off + len(line)})
		}
		off += len(line)
	}
	return out
}

// fakeMerger merges by taking the side that changed, conflicting when both did.
type fakeMerger struct{ fakeDiffer }

func (fakeMerger) Merge(_ context.Context, req differ.MergeRequest) (differ.MergeResponse, error) {
	switch {
	case string(req.Ours) == string(req.Base):
		return differ.MergeResponse{Merged: req.Theirs, Notes: []string{"took theirs"}}, nil
	case string(req.Theirs) == string(req.Base):
		return differ.MergeResponse{Merged: req.Ours, Notes: []string{"took ours"}}, nil
	}
	return differ.MergeResponse{Conflicts: []string{"line everything"}}, nil
}
