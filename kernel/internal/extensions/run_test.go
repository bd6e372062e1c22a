package extensions

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/kulehq/kule/kernel/internal/pluginhost"
	"github.com/kulehq/kule/sdk/extension"
)

// TestMain serves a fake extension host when the test binary is started as
// one: it stands for a host that does whatever a compromised extension
// could make it do, so the kernel's side is tested on its own.
func TestMain(m *testing.M) {
	if os.Getenv("KULE_TEST_FAKE_EXT_HOST") == "1" {
		extension.Serve(fakeHost{})
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fakeHost: a command named "call" makes the bridge call its args name
// (["method", args]) and returns the answer or the refusal's words; the
// review-notes hook returns the notes in its review's name field.
type fakeHost struct{}

func (fakeHost) Load(_ context.Context, req extension.LoadRequest, _ extension.Bridge) (extension.Result, error) {
	return extension.Result{Registered: []string{"command:call"}}, nil
}

func (fakeHost) Invoke(ctx context.Context, req extension.InvokeRequest, bridge extension.Bridge) (extension.Result, error) {
	switch req.Kind {
	case "command":
		var a []json.RawMessage
		if err := json.Unmarshal(req.Args, &a); err != nil || len(a) != 2 {
			return extension.Result{}, &extension.CallError{Kind: extension.FailRefused, Message: "want [method, args]"}
		}
		var method string
		_ = json.Unmarshal(a[0], &method)
		res, err := bridge(ctx, method, a[1])
		if err != nil {
			b, _ := json.Marshal("refused: " + err.Error())
			return extension.Result{Value: b}, nil
		}
		return extension.Result{Value: res}, nil
	case "review.notes":
		var rv Review
		_ = json.Unmarshal(req.Args, &rv)
		return extension.Result{Value: json.RawMessage(rv.Name)}, nil
	}
	return extension.Result{}, &extension.CallError{Kind: extension.FailNotFound, Message: req.Kind}
}

// services answers every call it is handed and records it: what reaches it
// passed the permission check.
type services struct{ got []string }

func (s *services) Call(_ context.Context, m *extension.Manifest, method string, args json.RawMessage) (json.RawMessage, error) {
	s.got = append(s.got, method)
	return json.RawMessage(`"answered ` + method + `"`), nil
}

func fakeLauncher(t *testing.T, home string) Launcher {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h := pluginhost.New(home, pluginhost.Options{Self: exe, CmdFactory: func(_ context.Context, spec pluginhost.LaunchSpec) (*exec.Cmd, error) {
		return &exec.Cmd{Path: spec.Path, Args: spec.Args, Env: []string{"KULE_TEST_FAKE_EXT_HOST=1"}}, nil
	}})
	return HostLauncher(h)
}

func startFake(t *testing.T, manifest string) (*Running, *services) {
	t.Helper()
	home := t.TempDir()
	s := New(home)
	if _, err := s.Install(pack(t, map[string]string{"extension.json": manifest, "main.js": "1"})); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Approve("me.x", ""); err != nil {
		t.Fatal(err)
	}
	svc := &services{}
	r := &Runner{Store: s, Launch: fakeLauncher(t, home), Services: svc}
	x, err := r.Start(context.Background(), "me.x")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(x.Close)
	return x, svc
}

// TestHostAsksForWhatWasNotGranted: a host that calls into Kule for what
// its extension was not granted (or for what Kule never offers: commit,
// secrets) is refused on the kernel's side, and the call never reaches the
// services. With the permission granted, the same call goes through, so
// the check is what refused it.
func TestHostAsksForWhatWasNotGranted(t *testing.T) {
	t.Parallel()
	x, svc := startFake(t, `{"id":"me.x","name":"X","version":"1.0.0","permissions":["commands","tasks.read"],"commands":[{"id":"call","title":"Call"}]}`)
	ctx := context.Background()
	for _, method := range []string{"files.read", "review.effects", "notify", "commit", "secrets.get", "undo", "policy.set"} {
		got, err := x.Run(ctx, "call", json.RawMessage(`["`+method+`", ["abcd1234", "a.txt"]]`))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(got), "refused") || !strings.Contains(string(got), "extension call denied") {
			t.Errorf("%s: %s", method, got)
		}
	}
	if len(svc.got) != 0 {
		t.Fatalf("refused calls reached the services: %v", svc.got)
	}
	if d := x.Denied(); len(d) != 7 {
		t.Fatalf("denied %v", d)
	}
	got, err := x.Run(ctx, "call", json.RawMessage(`["tasks.list", []]`))
	if err != nil || string(got) != `"answered tasks.list"` || len(svc.got) != 1 {
		t.Fatalf("granted call: %s %v %v", got, err, svc.got)
	}
	// A command the manifest does not declare is not run, whatever the
	// host registered.
	if _, err := x.Run(ctx, "other", nil); !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("undeclared command: %v", err)
	}
}

// TestReviewNotesKeptOnlyForTheReview: notes naming a path outside the
// review, control characters or too long a text are dropped.
func TestReviewNotesKeptOnlyForTheReview(t *testing.T) {
	t.Parallel()
	x, _ := startFake(t, `{"id":"me.x","name":"X","version":"1.0.0","permissions":["review.read","review.notes"],"review_notes":true}`)
	notes := `[{"path":"a.go","text":"this adds a TODO"},{"path":"../../etc/passwd","text":"x"},{"path":"a.go","text":"\u001b[31mred"},{"path":"a.go","text":"` + strings.Repeat("x", MaxNoteText+1) + `"},{"path":"b.go","entity":"func F","text":"changes a public API"}]`
	got, dropped, err := x.ReviewNotes(context.Background(), Review{Task: "abcd1234", Name: notes, Effects: []ReviewEffect{{Path: "a.go", Kind: "modify"}, {Path: "b.go", Kind: "add"}}})
	if err != nil {
		t.Fatal(err)
	}
	if dropped != 3 || len(got) != 2 || got[0].Text != "this adds a TODO" || got[1].Entity != "func F" || got[1].Extension != "me.x" {
		t.Fatalf("notes %+v, dropped %d", got, dropped)
	}
}
