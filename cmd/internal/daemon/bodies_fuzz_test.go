package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/kulehq/kule/kernel"
)

// bodyRoute is one API route that decodes a JSON body.
type bodyRoute struct {
	method, path string // "{id}" stands for the fuzzed task's id
	socket       bool   // served over the socket only
	seeds        []string
}

// bodyRoutes are every route whose handler decodes a request body, each
// seeded with the bodies the app and the tests send.
var bodyRoutes = []bodyRoute{
	{"DELETE", "/api/rules/1", false, []string{`{"subject":"api.example.com:443","for":"unknown-hosts","folder":"{folder}"}`, `{}`}},
	{"POST", "/api/agents/peer/hosts", false, []string{`{"trial":"abc","hosts":["model.test"]}`, `{"hosts":[]}`}},
	{"POST", "/api/tasks", false, []string{`{"folder":"{folder}","name":"x"}`, `{"folder":"relative"}`}},
	{"PATCH", "/api/tasks/{id}", false, []string{`{"name":"fix the build","colour":"teal"}`, `{"wait_minutes":5}`, `{"colour":"plaid"}`}},
	{"POST", "/api/tasks/{id}/move", false, []string{`{"by":-1}`, `{"by":3}`}},
	{"POST", "/api/tasks/{id}/exec", false, []string{`{"command":"echo hi > a.txt"}`, `{"args":["true"]}`, `{}`}},
	{"POST", "/api/tasks/{id}/agent", false, []string{`{"agent":"claude-code","prompt":"fix it","fresh":true}`}},
	{"POST", "/api/tasks/{id}/recall", false, []string{`{"prompt":"fix the build error"}`, `{"prompt":""}`}},
	{"POST", "/api/tasks/{id}/recall/budget", false, []string{`{"prompt":"fix the build error"}`}},
	{"POST", "/api/tasks/{id}/leases/CLOUD_TOKEN/grant", false, []string{`{"renew":1}`, `{"renew":0}`, `{}`}},
	{"POST", "/api/tasks/{id}/resume", false, []string{`{"run":3}`, `{}`}},
	{"POST", "/api/tasks/{id}/commit", false, []string{`{"approve_all":true}`, `{"approve":["a.txt"],"exclude":["b.txt"],"remember":["a.txt"]}`}},
	{"POST", "/api/tasks/{id}/group", false, []string{`{"group":"","confirm":true}`, `{"group":"nope"}`}},
	{"POST", "/api/groups", false, []string{`{"name":"web","colour":"blue","policy":"careful"}`, `{"name":"own","policy":"own","own_policy":"forbid(principal,action,resource);"}`}},
	{"PATCH", "/api/groups/nogroup", false, []string{`{"name":"renamed"}`}},
	{"PUT", "/api/policy", false, []string{`{"choice":"careful"}`, `{"choice":"loose"}`}},
	{"POST", "/api/questions", true, []string{`{"task":"{id}","kind":"connection","title":"connect to example.com:443","subject":"example.com:443"}`, `{"task":"ffffffff"}`}},
	{"POST", "/api/questions/q1/answer", false, []string{`{"approve":true,"remember":true}`}},
	{"PUT", "/api/settings", false, []string{`{"wait_minutes":10}`, `{"wait_minutes":-1}`}},
	{"PUT", "/api/shortcuts", false, []string{`{"commit":"c","undo":"u"}`, `[]`}},
	{"POST", "/api/events", true, []string{`{"type":"step","task":"{id}","data":{"n":1}}`, `{"type":"nope"}`}},
}

// noRun is a runner that runs nothing: a fuzzed body must not start a
// command on this machine, yet the exec handler's whole path is taken.
type noRun struct{}

func (noRun) Run(context.Context, kernel.RunSpec) (int, error) { return 0, nil }

// FuzzAPIBodies sends any body to every route that decodes one, through the
// daemon's own handler on a real kernel in a temp home. Whatever the body,
// the handler does not panic, answers JSON, and refuses with a 4xx whose
// body says what was wrong — never a 5xx for what the client sent; a body
// that is not JSON is a 400.
func FuzzAPIBodies(f *testing.F) {
	for i, r := range bodyRoutes {
		for _, s := range r.seeds {
			f.Add(uint8(i), []byte(s))
		}
		f.Add(uint8(i), []byte(`{"unknown":1}`))
		f.Add(uint8(i), []byte(`{`))
	}
	home := filepath.Join(f.TempDir(), "home")
	k, err := kernel.New(kernel.Config{Home: home})
	if err != nil {
		f.Fatal(err)
	}
	d, err := Start(Config{
		Kernel: k, Idle: -1, UserHome: f.TempDir(),
		Log:       hclog.NewNullLogger(),
		RunnerFor: func(*kernel.Task, *kernel.RunSpec) (kernel.Runner, error) { return noRun{}, nil },
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(d.Shutdown)
	api := d.apiHandler()
	folder := filepath.Join(f.TempDir(), "project")
	id := fuzzTask(f, api, folder)

	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		r := bodyRoutes[int(route)%len(bodyRoutes)]
		body = bytes.ReplaceAll(body, []byte("{id}"), []byte(id))
		body = bytes.ReplaceAll(body, []byte("{folder}"), []byte(folder))
		if r.path == "/api/tasks" && !newTaskBodyStaysHome(body, folder) {
			return // a task of another folder would copy that folder
		}
		req := httptest.NewRequest(r.method, strings.ReplaceAll(r.path, "{id}", id), bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if r.socket {
			req = req.WithContext(context.WithValue(req.Context(), viaSocketKey{}, true))
		}
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		res := rec.Result()
		out := rec.Body.Bytes()
		if ct := res.Header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s %s %q: Content-Type %q", r.method, r.path, body, ct)
		}
		if !json.Valid(out) {
			t.Fatalf("%s %s %q: answer is not JSON: %q", r.method, r.path, body, out)
		}
		if res.StatusCode >= 500 {
			t.Fatalf("%s %s %q: %d for what the client sent: %s", r.method, r.path, body, res.StatusCode, out)
		}
		if res.StatusCode >= 400 {
			var e apiError
			if err := json.Unmarshal(out, &e); err != nil || strings.TrimSpace(e.Error) == "" {
				t.Fatalf("%s %s %q: %d without a reason: %s", r.method, r.path, body, res.StatusCode, out)
			}
		}
		if len(bytes.TrimSpace(body)) > 0 && !json.Valid(body) && res.StatusCode != http.StatusBadRequest {
			t.Fatalf("%s %s %q: a body that is not JSON got %d: %s", r.method, r.path, body, res.StatusCode, out)
		}
	})
}

// newTaskBodyStaysHome reports whether a POST /api/tasks body names no
// folder but the test's own: any other is relative, and refused before a
// folder is read.
func newTaskBodyStaysHome(body []byte, folder string) bool {
	var in struct {
		Folder string `json:"folder"`
	}
	if json.Unmarshal(body, &in) != nil {
		return true
	}
	f := strings.TrimSpace(in.Folder)
	return f == folder || !strings.HasPrefix(f, "/") && !strings.HasPrefix(f, "~")
}

// fuzzTask makes the sample folder and a task of it through the API, and
// returns the task's id.
func fuzzTask(tb testing.TB, api http.Handler, folder string) string {
	tb.Helper()
	for name, text := range map[string]string{"README.md": "# Project\n\nHello.\n", "notes/plan.md": "# Plan\n"} {
		p := filepath.Join(folder, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	b, _ := json.Marshal(map[string]string{"folder": folder})
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, httptest.NewRequest("POST", "/api/tasks", bytes.NewReader(b)))
	var v struct {
		Task struct {
			ID string `json:"id"`
		} `json:"task"`
	}
	if rec.Code != http.StatusCreated || json.Unmarshal(rec.Body.Bytes(), &v) != nil || v.Task.ID == "" {
		tb.Fatalf("new task: %d %s", rec.Code, rec.Body)
	}
	return v.Task.ID
}
