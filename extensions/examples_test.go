package extensions_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kulehq/kule/extensions/host"
	"github.com/kulehq/kule/extensions/sdk"
	"github.com/kulehq/kule/extensions/skeleton"
	"github.com/kulehq/kule/sdk/extension"
)

func packExample(t *testing.T, name string) *extension.Package {
	t.Helper()
	_, pkg, err := extension.Pack(filepath.Join("examples", name))
	if err != nil {
		t.Fatal(err)
	}
	return pkg
}

func loadPkg(t *testing.T, h *host.Host, pkg *extension.Package, bridge extension.Bridge) {
	t.Helper()
	settings := map[string]any{}
	for _, s := range pkg.Manifest.Settings {
		settings[s.ID] = s.Default
	}
	sj, _ := json.Marshal(settings)
	if _, err := h.Load(context.Background(), extension.LoadRequest{Extension: pkg.Manifest.ID, Version: pkg.Manifest.Version, Files: pkg.Files,
		Main: pkg.Manifest.Main, Settings: sj, CallTimeoutMS: 10000}, bridge); err != nil {
		t.Fatal(err)
	}
}

// TestExamples: each example packs, passes the package rules and does what
// its manifest says.
func TestExamples(t *testing.T) {
	t.Parallel()
	h := host.New(nil)
	bridge := func(_ context.Context, method string, args json.RawMessage) (json.RawMessage, error) {
		switch method {
		case "tasks.list":
			return json.RawMessage(`[{"id":"abcd1234","folder":"/p"}]`), nil
		case "notify":
			return json.RawMessage(`true`), nil
		case "files.read":
			if strings.Contains(string(args), "todo.go") {
				return json.RawMessage(`"package x // TODO: more"`), nil
			}
			return json.RawMessage(`"package x"`), nil
		}
		return nil, errors.New("denied")
	}

	hello := packExample(t, "hello-panel")
	loadPkg(t, h, hello, bridge)
	r, err := h.Invoke(context.Background(), extension.InvokeRequest{Extension: hello.Manifest.ID, Kind: "command", Name: "count"}, bridge)
	if err != nil || string(r.Value) != `{"tasks":1}` {
		t.Fatalf("count = %s, %v", r.Value, err)
	}
	r, err = h.Invoke(context.Background(), extension.InvokeRequest{Extension: hello.Manifest.ID, Kind: "command", Name: "greet", Args: json.RawMessage(`["Ada"]`)}, bridge)
	if err != nil || string(r.Value) != `"Hello, Ada!"` {
		t.Fatalf("greet = %s, %v", r.Value, err)
	}

	notes := packExample(t, "todo-notes")
	loadPkg(t, h, notes, bridge)
	rv := `{"task":"abcd1234","effects":[{"path":"todo.go","kind":"add"},{"path":"api.go","kind":"modify","entities":["func Serve","func helper"]}]}`
	r, err = h.Invoke(context.Background(), extension.InvokeRequest{Extension: notes.Manifest.ID, Kind: "review.notes", Args: json.RawMessage(rv)}, bridge)
	if err != nil || string(r.Value) != `[{"path":"todo.go","text":"this adds a TODO"},{"path":"api.go","entity":"func Serve","text":"this changes a public API"}]` {
		t.Fatalf("notes = %s, %v", r.Value, err)
	}

	theme := packExample(t, "dusk-theme")
	th, err := extension.ParseTheme(theme.Files[theme.Manifest.Themes[0].File])
	if err != nil || !th.Dark || th.Colors["accent"] != "#f2a65a" {
		t.Fatalf("theme %+v %v", th, err)
	}
}

// TestSkeleton: what `kule ext new` writes is a valid extension whose
// command runs.
func TestSkeleton(t *testing.T) {
	t.Parallel()
	files, err := skeleton.Files("me.hello", "Hello")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(files["kule.d.ts"], sdk.DTS) || !bytes.Contains(sdk.DTS, []byte("declare")) {
		t.Fatalf("the skeleton's kule.d.ts is not the SDK's (%d bytes)", len(files["kule.d.ts"]))
	}
	raw, err := extension.ParseManifest(files[extension.ManifestName])
	if err != nil || raw.ID != "me.hello" {
		t.Fatalf("skeleton manifest: %v", err)
	}
	h := host.New(nil)
	bridge := func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`[]`), nil
	}
	loadPkg(t, h, &extension.Package{Manifest: raw, Files: files}, bridge)
	r, err := h.Invoke(context.Background(), extension.InvokeRequest{Extension: "me.hello", Kind: "command", Name: "hello"}, bridge)
	if err != nil || string(r.Value) != `"Hello from me.hello: 0 task(s)."` {
		t.Fatalf("hello = %s, %v", r.Value, err)
	}
}
