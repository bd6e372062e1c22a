package main

import (
	"context"
	"encoding/json"
	"github.com/kulehq/kule/kernel"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kulehq/kule/cmd/internal/daemon/client"
)

func TestNameAndColor(t *testing.T) {
	c := cli{t: t, home: filepath.Join(t.TempDir(), "home")}
	folder := t.TempDir()
	appMust(t, os.WriteFile(filepath.Join(folder, "a.txt"), []byte("a\n"), 0o644))
	id := strings.Fields(c.must("new", folder))[1]
	c.must("name", id, "Quarterly", "notes")
	c.must("color", id, "teal")
	if out, err := c.kule("", "color", id, "mauve"); err == nil || !strings.Contains(out, "not a colour") {
		t.Fatalf("kule color mauve: %v %s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(c.home, "tasks", id, "task.json"))
	appMust(t, err)
	if !strings.Contains(string(b), `"name": "Quarterly notes"`) || !strings.Contains(string(b), `"colour": "teal"`) {
		t.Fatalf("task.json: %s", b)
	}
	c.must("color", id, "none")
	b, _ = os.ReadFile(filepath.Join(c.home, "tasks", id, "task.json"))
	if strings.Contains(string(b), "colour") {
		t.Fatalf("colour none kept a colour: %s", b)
	}
}

// TestAppStartsOneDaemon runs `kule app --print-url` twice: the first starts
// the daemon, the second finds it; the address opens the app.
func TestAppStartsOneDaemon(t *testing.T) {
	c := cli{t: t, home: filepath.Join(t.TempDir(), "home")}
	url := strings.TrimSpace(c.must("app", "--print-url"))
	t.Cleanup(func() {
		b, err := os.ReadFile(filepath.Join(c.home, "kuled.lock"))
		if pid, err2 := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && err2 == nil && pid > 1 {
			syscall.Kill(pid, syscall.SIGTERM)
		}
	})
	if !strings.HasPrefix(url, "http://127.") || strings.HasPrefix(url, "http://127.0.0.1:") || !strings.Contains(url, "/?launch=") {
		t.Fatalf("address %q, want a launch address on the home's own 127.x.y.z", url)
	}
	origin, _, _ := strings.Cut(url, "/?")
	if again := strings.TrimSpace(c.must("app", "--print-url")); !strings.HasPrefix(again, origin+"/?launch=") || again == url {
		t.Fatalf("a second kule app gave %q, want a new launch code for the running daemon's %q", again, origin)
	}
	jar, _ := cookiejar.New(nil)
	resp, err := (&http.Client{Jar: jar}).Get(url)
	appMust(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "Needs you") {
		t.Fatalf("opening the address: %d %.200s", resp.StatusCode, body)
	}
	if out, err := c.kule("", "daemon"); err == nil || !strings.Contains(out, "already runs") {
		t.Fatalf("a second daemon: %v %s", err, out)
	}
}

func appMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestAppCommandsRunInTheSandbox makes a task and runs commands through the
// daemon `kule app` started: the copy changes, the real folder cannot.
func TestAppCommandsRunInTheSandbox(t *testing.T) {
	c := cli{t: t, home: filepath.Join(t.TempDir(), "home")}
	c.must("app", "--print-url")
	t.Cleanup(func() {
		b, err := os.ReadFile(filepath.Join(c.home, "kuled.lock"))
		if pid, err2 := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && err2 == nil && pid > 1 {
			syscall.Kill(pid, syscall.SIGTERM)
		}
	})
	folder := t.TempDir()
	appMust(t, os.WriteFile(filepath.Join(folder, "a.txt"), []byte("a\n"), 0o644))
	cl := client.New(c.home)
	ctx := context.Background()
	var made struct {
		Task struct{ ID string }
	}
	appMust(t, cl.Do(ctx, "POST", "/api/tasks", map[string]string{"folder": folder}, &made))
	var step struct {
		Code   int
		Error  string
		Output string
	}
	appMust(t, cl.Do(ctx, "POST", "/api/tasks/"+made.Task.ID+"/exec", map[string]string{"command": "echo b > b.txt && echo escaped > " + filepath.Join(folder, "escape.txt") + "; true"}, &step))
	if step.Error != "" {
		t.Fatalf("exec through the daemon: %+v", step)
	}
	if _, err := os.Stat(filepath.Join(folder, "escape.txt")); err == nil {
		t.Fatalf("a command run from the app wrote the real folder: %+v", step)
	}
	var st struct {
		Changes []struct{ Path string }
	}
	appMust(t, cl.Do(ctx, "GET", "/api/tasks/"+made.Task.ID, nil, &st))
	if len(st.Changes) != 1 || st.Changes[0].Path != "b.txt" {
		t.Fatalf("changes after the app's command: %+v (output %q)", st.Changes, step.Output)
	}
}

// TestConnectionQuestionsReachThePerson: with `kule app`'s daemon running,
// a connection the policy asks about waits for a person, both for a command
// the app runs (in the sandbox) and for `kule exec` in a terminal; approved
// through the daemon, the command gets the server's answer.
func TestConnectionQuestionsReachThePerson(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl on PATH")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello from the server") }))
	defer srv.Close()
	hp := strings.TrimPrefix(srv.URL, "http://")
	c := cli{t: t, home: filepath.Join(t.TempDir(), "home")}
	c.must("app", "--print-url")
	t.Cleanup(func() {
		b, err := os.ReadFile(filepath.Join(c.home, "kuled.lock"))
		if pid, err2 := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && err2 == nil && pid > 1 {
			syscall.Kill(pid, syscall.SIGTERM)
		}
	})
	folder := t.TempDir()
	appMust(t, os.WriteFile(filepath.Join(folder, "a.txt"), []byte("a\n"), 0o644))
	id := strings.Fields(c.must("new", folder))[1]
	cl := client.New(c.home)
	ctx := context.Background()
	done := make(chan string, 1)
	execOut := make(chan string, 1)
	approveNext := func() string {
		for i := 0; i < 600; i++ {
			var qs []struct{ ID, State, Kind, Subject, Detail string }
			appMust(t, cl.Do(ctx, "GET", "/api/questions", nil, &qs))
			for _, q := range qs {
				if q.State == "waiting" && q.Kind == "connection" && q.Subject == hp {
					appMust(t, cl.Do(ctx, "POST", "/api/questions/"+q.ID+"/answer", map[string]bool{"approve": true}, nil))
					return q.Detail
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		select {
		case out := <-done:
			t.Fatalf("no connection question came; the app's command said %q", out)
		case out := <-execOut:
			t.Fatalf("no connection question came; kule exec said %q", out)
		default:
		}
		t.Fatal("no connection question came")
		return ""
	}
	// --noproxy '': the sandbox keeps loopback off the proxy; this server is the host's.
	curl := "curl --noproxy '' -f -s -S --max-time 60 http://" + hp + "/"

	// From the app: in the sandbox, through the task's proxy.
	go func() {
		var step struct{ Output, Error string }
		if err := cl.Do(ctx, "POST", "/api/tasks/"+id+"/exec", map[string]string{"command": curl}, &step); err != nil {
			step.Error = err.Error()
		}
		done <- step.Output + step.Error
	}()
	approveNext()
	if out := <-done; !strings.Contains(out, "hello from the server") {
		t.Fatalf("the app's command after approval: %q", out)
	}

	// From a terminal: kule exec asks through the daemon.
	go func() {
		out, err := c.kule("", "exec", id, "--", "sh", "-c", curl)
		if err != nil {
			out += err.Error()
		}
		execOut <- out
	}()
	if d := approveNext(); !strings.Contains(d, "from a terminal") {
		t.Fatalf("the terminal's question says %q", d)
	}
	if out := <-execOut; !strings.Contains(out, "hello from the server") || !strings.Contains(out, "waits for your answer in the app") {
		t.Fatalf("kule exec after approval: %q", out)
	}
}

// TestRunAskGoesToTheDaemon: with a daemon running, `kule run --ask` puts an
// agent's permission question under Needs you; the answer picks the agent's
// allow-once option, a denial its reject-once option.
func TestRunAskGoesToTheDaemon(t *testing.T) {
	c := cli{t: t, home: filepath.Join(t.TempDir(), "home")}
	folder := t.TempDir()
	appMust(t, os.WriteFile(filepath.Join(folder, "a.txt"), []byte("a\n"), 0o644))
	id := strings.Fields(c.must("new", folder))[1]
	tk := &kernel.Task{ID: id}
	if daemonPermissionAsk(c.home, tk, "peer") != nil {
		t.Fatal("with no daemon, --ask went to a daemon")
	}
	c.must("app", "--print-url")
	t.Cleanup(func() {
		b, err := os.ReadFile(filepath.Join(c.home, "kuled.lock"))
		if pid, err2 := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && err2 == nil && pid > 1 {
			syscall.Kill(pid, syscall.SIGTERM)
		}
	})
	ask := daemonPermissionAsk(c.home, tk, "peer")
	if ask == nil {
		t.Fatal("with a daemon running, --ask did not go to it")
	}
	cl := client.New(c.home)
	ctx := context.Background()
	opts := []kernel.PermissionOption{{OptionID: "yes", Kind: "allow_once"}, {OptionID: "no", Kind: "reject_once"}}
	for _, approve := range []bool{true, false} {
		got := make(chan string, 1)
		go func() {
			id, _ := ask(ctx, kernel.Question{Title: "Run make", Kind: "execute", Command: "make", Options: opts})
			got <- id
		}()
		var q struct{ ID, Title string }
		for i := 0; q.ID == "" && i < 600; i++ {
			var qs []struct{ ID, State, Kind, Title string }
			appMust(t, cl.Do(ctx, "GET", "/api/questions", nil, &qs))
			for _, x := range qs {
				if x.State == "waiting" && x.Kind == "permission" {
					q.ID, q.Title = x.ID, x.Title
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		if q.Title != "peer asks: Run make" {
			t.Fatalf("question %+v", q)
		}
		appMust(t, cl.Do(ctx, "POST", "/api/questions/"+q.ID+"/answer", map[string]bool{"approve": approve}, nil))
		want := map[bool]string{true: "yes", false: "no"}[approve]
		if id := <-got; id != want {
			t.Fatalf("approve=%v picked %q, want %q", approve, id, want)
		}
	}
}

// TestCommitFollowsTheGroupsPolicy: a task in a careful group is judged by
// careful in `kule commit` too, not by the home's balanced.
func TestCommitFollowsTheGroupsPolicy(t *testing.T) {
	c := cli{t: t, home: filepath.Join(t.TempDir(), "home")}
	folder := t.TempDir()
	appMust(t, os.WriteFile(filepath.Join(folder, "a.txt"), []byte("a\n"), 0o644))
	id := strings.Fields(c.must("new", folder))[1]
	name, pol := "Careful work", kernel.GroupCareful
	g, err := kernel.OpenGroups(c.home).Create(kernel.GroupEdit{Name: &name, Policy: &pol})
	appMust(t, err)
	b, err := os.ReadFile(filepath.Join(c.home, "tasks", id, "task.json"))
	appMust(t, err)
	b = []byte(strings.Replace(string(b), "{", `{"group": "`+g.ID+`",`, 1))
	appMust(t, os.WriteFile(filepath.Join(c.home, "tasks", id, "task.json"), b, 0o600))
	c.must("exec", id, "--no-sandbox", "--", "sh", "-c", "echo b >> a.txt")
	out, _ := c.kule("", "commit", id)
	if got, _ := os.ReadFile(filepath.Join(folder, "a.txt")); string(got) != "a\n" {
		t.Fatalf("kule commit took in a change the group's careful policy asks about:\n%s", out)
	}
	if !strings.Contains(out, "every-change") {
		t.Fatalf("kule commit does not name the careful rule:\n%s", out)
	}
}

// TestGroupFromATerminal: kule group new with a policy file (checked),
// kule group move asks first when a pending verdict changes, --yes moves.
func TestGroupFromATerminal(t *testing.T) {
	c := cli{t: t, home: filepath.Join(t.TempDir(), "home")}
	folder := t.TempDir()
	appMust(t, os.WriteFile(filepath.Join(folder, "notes.md"), []byte("a\n"), 0o644))
	id := strings.Fields(c.must("new", folder))[1]
	c.must("exec", id, "--no-sandbox", "--", "sh", "-c", "echo b >> notes.md")
	bad := filepath.Join(t.TempDir(), "bad.cedar")
	appMust(t, os.WriteFile(bad, []byte("permit (principal, action, resource) when { resource.nope };"), 0o600))
	if out, err := c.kule("", "group", "new", "Docs", "--policy-file", bad); err == nil || !strings.Contains(out, "does not validate") {
		t.Fatalf("a policy that does not validate: %v\n%s", err, out)
	}
	own := filepath.Join(t.TempDir(), "own.cedar")
	appMust(t, os.WriteFile(own, []byte(`@id("markdown-waits") @verdict("ask")
forbid (principal, action == Kule::Action::"file.modify", resource is Kule::Path) when { resource.ext == "md" };
permit (principal, action, resource);
`), 0o600))
	gid := strings.Fields(c.must("group", "new", "Docs", "--colour", "teal", "--policy-file", own))[1]
	out, err := c.kule("", "group", "move", id, "Docs")
	if err == nil || !strings.Contains(out, "notes.md: pass → ask") || !strings.Contains(out, "nothing was moved") {
		t.Fatalf("a move that changes a verdict: %v\n%s", err, out)
	}
	if list := c.must("group", "list"); strings.Contains(list, id) {
		t.Fatalf("the refused move moved the task:\n%s", list)
	}
	c.must("group", "move", id, "Docs", "--yes")
	if list := c.must("group", "list"); !strings.Contains(list, gid) || !strings.Contains(list, id) || !strings.Contains(list, "own") {
		t.Fatalf("kule group list after the move:\n%s", list)
	}
	// Back to no group: that too changes the verdict, the other way.
	if out, err := c.kule("", "group", "move", id, "none"); err == nil || !strings.Contains(out, "notes.md: ask → pass") {
		t.Fatalf("moving back: %v\n%s", err, out)
	}
	c.must("group", "move", id, "none", "--yes")
}

// TestExecIsKeptForTheAppsTimeline: a run of kule exec in a terminal is kept in the task's
// steps.jsonl as started from a terminal, so the app's Live and Timeline show it after a
// reload, as they show the app's own runs.
func TestExecIsKeptForTheAppsTimeline(t *testing.T) {
	c := cli{t: t, home: filepath.Join(t.TempDir(), "home")}
	folder := t.TempDir()
	appMust(t, os.WriteFile(filepath.Join(folder, "a.txt"), []byte("a\n"), 0o644))
	id := strings.Fields(c.must("new", folder))[1]
	c.must("exec", id, "--no-sandbox", "--", "sh", "-c", "echo from-a-terminal >> a.txt")
	b, err := os.ReadFile(filepath.Join(c.home, "tasks", id, "steps.jsonl"))
	appMust(t, err)
	var step struct {
		Kind, Command, Source, Summary string
		Code                           int
	}
	appMust(t, json.Unmarshal(b, &step))
	if step.Kind != "exec" || step.Source != "cli" || !strings.Contains(step.Command, "from-a-terminal") || step.Code != 0 || step.Summary == "" {
		t.Fatalf("steps.jsonl after kule exec: %s", b)
	}
}
