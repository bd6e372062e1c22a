package daemon

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/kulehq/kule/internal/golden"
	"github.com/kulehq/kule/kernel"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden with what the API answers now")

// Unstable parts of an answer beyond times and hashes, each with the
// placeholder that stands for it in a golden file: durations and the
// workspace backend (which the file system picks).
var goldenRules = []golden.Rule{
	golden.Time,
	golden.Hash,
	{Re: regexp.MustCompile(`"(seconds|duration_ms|ms)": [0-9.e+-]+`), With: func(s string) string {
		k, _, _ := strings.Cut(s, ":")
		return k + `: "<duration>"`
	}},
	golden.Replace(`"backend": "(reflink|copy|overlay)"`, `"backend": "<backend>"`),
}

// normalizeGolden makes an answer comparable from run to run (see
// golden.Normalize): known values by name, then goldenRules.
func normalizeGolden(out string, known map[string]string) string {
	return golden.Normalize(out, known, goldenRules...)
}

// checkGolden fails t when got differs from testdata/golden/name.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden.Check(t, name, got, *update)
}

// TestGoldenAPI: the JSON of GET /api/tasks and GET /api/tasks/{id} for a
// task with a change of each common kind stays as testdata/golden has it.
func TestGoldenAPI(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	k, err := kernel.New(kernel.Config{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	d, err := Start(Config{
		Kernel: k, Idle: -1, UserHome: filepath.Join(dir, "user"),
		Log:       hclog.NewNullLogger(),
		RunnerFor: func(*kernel.Task, *kernel.RunSpec) (kernel.Runner, error) { return kernel.DirectRunner{}, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Shutdown)
	api := d.apiHandler()
	call := func(method, path, body string, want int) []byte {
		t.Helper()
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
		if rec.Code != want {
			t.Fatalf("%s %s: %d, want %d: %s", method, path, rec.Code, want, rec.Body)
		}
		return rec.Body.Bytes()
	}
	folder := filepath.Join(dir, "project")
	id := fuzzTask(t, api, folder)
	b, _ := json.Marshal(ExecRequest{Args: []string{"sh", "-c", `printf '# Plan\n\nmonth\n' > notes/plan.md; rm README.md; echo new > todo.txt`}})
	call("POST", "/api/tasks/"+id+"/exec", string(b), http.StatusOK)
	call("PATCH", "/api/tasks/"+id, `{"name":"plan the month","colour":"teal"}`, http.StatusOK)
	known := map[string]string{id: "id", folder: "folder", home: "home", dir: "tmp"}
	golden := func(name, path string) {
		t.Helper()
		var out bytes.Buffer
		if err := json.Indent(&out, call("GET", path, "", http.StatusOK), "", "  "); err != nil {
			t.Fatalf("GET %s: not JSON: %v", path, err)
		}
		checkGolden(t, name, normalizeGolden(out.String(), known))
	}
	golden("tasks.json", "/api/tasks")
	golden("task.json", "/api/tasks/"+id)
}

// TestGoldenNormalizer: each unstable part becomes its placeholder and
// nothing else is touched, so a golden file can neither pass by hiding a
// real change nor fail by a time.
func TestGoldenNormalizer(t *testing.T) {
	known := map[string]string{"5acf8d46": "id", "/tmp/T1/001/project": "folder", "/tmp/T1/001/home": "home", "/tmp/T1/001": "tmp"}
	tests := map[string]struct{ in, want string }{
		"id and paths":          {`"id": "5acf8d46", "copy": "/tmp/T1/001/home/tasks/5acf8d46/copy"`, `"id": "<id>", "copy": "<home>/tasks/<id>/copy"`},
		"a path inside another": {`"/tmp/T1/001/project", "/tmp/T1/001/other"`, `"<folder>", "<tmp>/other"`},
		"time":                  {`"created": "2026-12-01T23:12:54.181875952Z",`, `"created": "<time>",`},
		"time with a zone":      {`"as_of": "2026-12-01T23:12:54+01:00"`, `"as_of": "<time>"`},
		"seconds":               {`"seconds": 0.0123,`, `"seconds": "<duration>",`},
		"backend":               {`"backend": "reflink",`, `"backend": "<backend>",`},
		"hash":                  {`"sha256": "` + strings.Repeat("ab", 32) + `"`, `"sha256": "<hash>"`},
		"counts stay":           {`"changes": 3, "size": 47, "exit": 0`, `"changes": 3, "size": 47, "exit": 0`},
		"names stay":            {`"name": "plan the month", "colour": "teal"`, `"name": "plan the month", "colour": "teal"`},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := normalizeGolden(tt.in, known); got != tt.want {
				t.Errorf("normalizeGolden(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}
