package pluginhost

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	goplugin "github.com/hashicorp/go-plugin"

	sdkplugin "github.com/kulehq/kule/sdk/plugin"
	"github.com/kulehq/kule/sdk/transport"
)

// serveTransport is the fake third-party transport: it answers Info with
// its name and posts nowhere.
func serveTransport(mode string) {
	hs, _ := sdkplugin.Handshake(sdkplugin.KindTransport)
	goplugin.Serve(sdkplugin.TransportServeConfig(fakeTransport{name: mode}, mode, hs))
}

type fakeTransport struct{ name string }

func (f fakeTransport) Info(context.Context) (transport.Info, error) {
	return transport.Info{Name: f.name}, nil
}

func (f fakeTransport) Deliver(context.Context, transport.Event, string) (transport.Delivered, error) {
	return transport.Delivered{Ref: "1"}, nil
}

func (f fakeTransport) Receive(_ context.Context, cursor string, _ int64) (transport.Batch, error) {
	return transport.Batch{Cursor: cursor}, nil
}

// startChat starts the installed transport name as the kernel does.
func startChat(h *Host, name string) (*Started, error) {
	hs, err := sdkplugin.Handshake(sdkplugin.KindTransport)
	if err != nil {
		return nil, err
	}
	return h.StartInstalledWith(context.Background(), sdkplugin.KindTransport, name, hs,
		goplugin.PluginSet{sdkplugin.KindTransport: &sdkplugin.TransportPlugin{}}, StartOptions{})
}

func chatManifest(m *Manifest) {
	m.Kind = "transport"
	m.Differ = DifferConfig{}
	m.Permissions = []string{"network:chat.example.com", "network:files.example.com:8443"}
}

// TestStartInstalledTransport: an installed transport waits for approval
// (nothing of it runs), starts once approved and serves Info, and its
// manifest's network permissions are its hosts. A plugin of another kind is
// not started as a transport.
func TestStartInstalledTransport(t *testing.T) {
	h := newHost(t)
	if _, err := h.Install(makePlugin(t, "chat", chatManifest)); err != nil {
		t.Fatal(err)
	}
	if st, err := startChat(h, "chat"); !errors.Is(err, ErrNotApproved) {
		if st != nil {
			st.Kill()
		}
		t.Fatalf("start before approval = %v, want ErrNotApproved", err)
	}
	if ran("chat") {
		t.Fatal("the unapproved transport was executed")
	}
	if _, err := h.Approve("chat"); err != nil {
		t.Fatal(err)
	}
	st, err := startChat(h, "chat")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Kill()
	info, err := st.Raw.(*sdkplugin.TransportClient).Info(context.Background())
	if err != nil || info.Name != "chat" {
		t.Fatalf("info = %+v, %v", info, err)
	}
	s, err := h.Status("chat")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(s.Manifest.NetworkHosts(), " "), "chat.example.com files.example.com:8443"; got != want {
		t.Errorf("hosts = %q, want %q", got, want)
	}

	install(t, h, "notchat") // a differ
	if st, err := startChat(h, "notchat"); !errors.Is(err, ErrManifest) {
		if st != nil {
			st.Kill()
		}
		t.Fatalf("a differ started as a transport: %v", err)
	}
}

// TestInstalledTransportChangedAfterApproval is the attack: the approved
// transport's executable is replaced on disk (a binary that would read the
// chat as the bot). The launch reads the executable, sees a sha256 other
// than the approved one and runs nothing; with that check taken away the
// changed binary runs.
func TestInstalledTransportChangedAfterApproval(t *testing.T) {
	for _, guard := range []bool{true, false} {
		h := newHost(t)
		if _, err := h.Install(makePlugin(t, "chatx", chatManifest)); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Approve("chatx"); err != nil {
			t.Fatal(err)
		}
		exe := filepath.Join(writable(t, h, "chatx"), "chatx")
		f, err := os.OpenFile(exe, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte("changed after approval")); err != nil {
			t.Fatal(err)
		}
		f.Close()
		os.RemoveAll(markerDir(os.Getpid()))
		off.approvedSum = !guard
		st, err := startChat(h, "chatx")
		off.approvedSum = false
		if guard {
			if err == nil {
				st.Kill()
				t.Fatal("the changed transport started")
			}
			if !errors.Is(err, ErrNotApproved) || !strings.Contains(err.Error(), "executable changed since approval") {
				t.Fatalf("start = %v, want ErrNotApproved saying the executable changed", err)
			}
			if ran("chatx") {
				t.Fatal("the changed binary was executed")
			}
			continue
		}
		if err != nil {
			t.Fatalf("with the check taken away the changed binary did not start either: %v; the test shows nothing", err)
		}
		st.Kill()
		if !ran("chatx") {
			t.Fatal("with the check taken away no marker of the changed binary")
		}
	}
}
