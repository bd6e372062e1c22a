package daemon

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kulehq/kule/cmd/internal/daemon/client"

	"github.com/kulehq/kule/kernel"
)

// loopbackServer answers every request with its body; the policy asks a
// person about its host (127.0.0.1 is no host the built-ins know).
func loopbackServer(t *testing.T, body string) (*httptest.Server, string) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, body) }))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return srv, "127.0.0.1:" + port
}

func needCurl(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("no curl on PATH; CI must have it")
		}
		t.Skip("no curl on PATH: the test connects through the task's proxy with it")
	}
}

// waitQuestion waits for a question of kind about subject to wait.
func waitQuestion(t *testing.T, d *Daemon, kind, subject string) Question {
	t.Helper()
	for i := 0; i < 600; i++ {
		for _, q := range d.Q.List() {
			if q.State == Waiting && q.Kind == kind && q.Subject == subject {
				return q
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %s question about %s came", kind, subject)
	return Question{}
}

// TestConnectionWaitsForAPerson runs a real command in a task: it connects
// through the task's proxy to a loopback server whose host the Cedar policy
// asks about. The connection is held until the question is answered:
// approved, the command gets the answer; denied, it is refused; approved and
// remembered, the next run connects without asking (a rule in rules.cedar).
func TestConnectionWaitsForAPerson(t *testing.T) {
	t.Parallel()
	needCurl(t)
	_, hp := loopbackServer(t, "hello from the server")
	k := newKernel(t)
	d := startDaemon(t, Config{Kernel: k, Rules: &CedarRules{K: k}})
	ctx := context.Background()
	c := client.New(d.home)
	var made struct{ Task TaskView }
	must(t, c.Do(ctx, "POST", "/api/tasks", map[string]string{"folder": sampleFolder(t)}, &made))
	id := made.Task.ID
	run := func() chan Step {
		out := make(chan Step, 1)
		go func() {
			var s Step
			if err := c.Do(ctx, "POST", "/api/tasks/"+id+"/exec", ExecRequest{Command: "curl -f -s -S --max-time 60 http://" + hp + "/ > got.txt; echo code $?"}, &s); err != nil {
				s.Error = err.Error()
			}
			out <- s
		}()
		return out
	}
	gotFile := func() string { return readFile(filepath.Join(d.k.TaskDir(id), "copy", "got.txt")) }

	// Approved: held, then made.
	done := run()
	q := waitQuestion(t, d, KindConnection, hp)
	select {
	case s := <-done:
		t.Fatalf("the command ended before the question was answered: %+v", s)
	default:
	}
	_, err := d.Q.Answer(q.ID, Decision{Approve: true})
	must(t, err)
	s := <-done
	if got := gotFile(); got != "hello from the server" || !strings.Contains(s.Output, "code 0") {
		t.Fatalf("approved: got.txt %q, output %q", got, s.Output)
	}

	// Denied: refused by the proxy.
	done = run()
	q = waitQuestion(t, d, KindConnection, hp)
	_, err = d.Q.Answer(q.ID, Decision{Approve: false})
	must(t, err)
	s = <-done
	if got := gotFile(); strings.Contains(got, "hello") || !strings.Contains(s.Output, "403") || strings.Contains(s.Output, "code 0") {
		t.Fatalf("denied: got.txt %q, output %q", got, s.Output)
	}
	var net []map[string]any
	must(t, c.Do(ctx, "GET", "/api/tasks/"+id+"/network", nil, &net))
	if len(net) < 2 || net[len(net)-1]["verdict"] != "refused" || net[len(net)-2]["verdict"] != "forwarded" {
		t.Fatalf("network log = %v, want forwarded then refused", net)
	}

	// Approved and remembered: a rule for the folder; the next run asks nobody.
	done = run()
	q = waitQuestion(t, d, KindConnection, hp)
	_, err = d.Q.Answer(q.ID, Decision{Approve: true, Remember: true})
	must(t, err)
	<-done
	rs, err := d.k.RememberedRules()
	must(t, err)
	if len(rs) != 1 || rs[0].Subject != hp {
		t.Fatalf("remembered rules = %+v, want one for %s", rs, hp)
	}
	before := len(d.Q.List())
	must(t, os.Remove(filepath.Join(d.k.TaskDir(id), "copy", "got.txt")))
	s = <-run()
	if got := gotFile(); got != "hello from the server" || len(d.Q.List()) != before {
		t.Fatalf("after remember: got.txt %q, questions %d → %d, output %q", got, before, len(d.Q.List()), s.Output)
	}
}

// TestUnansweredConnectionIsRefusedWhenTheWaitRunsOut: the command goes on
// without the connection.
func TestUnansweredConnectionIsRefusedWhenTheWaitRunsOut(t *testing.T) {
	t.Parallel()
	needCurl(t)
	_, hp := loopbackServer(t, "never")
	k := newKernel(t)
	d := startDaemon(t, Config{Kernel: k})
	d.Q.testWait = 300 * time.Millisecond
	rep, err := d.k.NewTask(context.Background(), sampleFolder(t))
	must(t, err)
	s, err := d.Exec(context.Background(), rep.Task, []string{"sh", "-c", "curl -s --max-time 60 http://" + hp + "/; echo code $?"}, "curl")
	must(t, err)
	if strings.Contains(s.Output, "never") || !strings.Contains(s.Output, "not approved by a person") {
		t.Fatalf("an unanswered connection was made: %q", s.Output)
	}
	qs := d.Q.List()
	if len(qs) != 1 || qs[0].State != Expired || qs[0].By != "timeout" {
		t.Fatalf("questions = %+v, want one expired by timeout", qs)
	}
}

// TestGroupsPolicyAndMove: a group's own policy is validated before it is
// kept; moving a task into a group whose policy changes a pending verdict
// asks first (409 with the paths), and moves once confirmed.
func TestGroupsPolicyAndMove(t *testing.T) {
	t.Parallel()
	k := newKernel(t)
	d := startDaemon(t, Config{Kernel: k})
	ctx := context.Background()
	c := client.New(d.home)
	var made struct{ Task TaskView }
	must(t, c.Do(ctx, "POST", "/api/tasks", map[string]string{"folder": sampleFolder(t)}, &made))
	id := made.Task.ID
	var s Step
	must(t, c.Do(ctx, "POST", "/api/tasks/"+id+"/exec", ExecRequest{Command: "echo more >> README.md"}, &s))

	bad := "permit (principal, action, resource) when { resource.no_such_attribute };"
	err := c.Do(ctx, "POST", "/api/groups", map[string]any{"name": "Notes", "own_policy": bad}, nil)
	if err == nil || !strings.Contains(err.Error(), "does not validate") {
		t.Fatalf("a policy that does not validate was kept: %v", err)
	}
	if gs, _ := d.k.Groups().List(); len(gs) != 0 {
		t.Fatalf("groups after a refused policy: %+v", gs)
	}
	own := `@id("markdown-waits") @verdict("ask")
forbid (principal, action == Kule::Action::"file.modify", resource is Kule::Path) when { resource.ext == "md" };
permit (principal, action, resource);
`
	var g kernel.Group
	must(t, c.Do(ctx, "POST", "/api/groups", map[string]any{"name": "Careful notes", "colour": "teal", "own_policy": own}, &g))
	var plain kernel.Group
	must(t, c.Do(ctx, "POST", "/api/groups", map[string]any{"name": "Plain"}, &plain))
	if g.Policy != kernel.GroupOwnPolicy || plain.Policy != kernel.GroupDefaultPolicy {
		t.Fatalf("groups: %+v %+v", g, plain)
	}
	// Into a group that changes nothing: moved at once.
	must(t, c.Do(ctx, "POST", "/api/tasks/"+id+"/group", map[string]any{"group": plain.ID}, nil))
	// Into one that makes README.md wait: asked first.
	err = c.Do(ctx, "POST", "/api/tasks/"+id+"/group", map[string]any{"group": g.ID}, nil)
	if err == nil || !strings.Contains(err.Error(), "changes what its policy says") {
		t.Fatalf("a move that changes a verdict was not asked about: %v", err)
	}
	tk, err := d.k.LoadTask(id)
	must(t, err)
	if tk.Group != plain.ID {
		t.Fatalf("the refused move moved the task to %q", tk.Group)
	}
	must(t, c.Do(ctx, "POST", "/api/tasks/"+id+"/group", map[string]any{"group": g.ID, "confirm": true}, nil))
	var st struct{ Changes []ChangeView }
	must(t, c.Do(ctx, "GET", "/api/tasks/"+id, nil, &st))
	if len(st.Changes) != 1 || st.Changes[0].Verdict != "ask" || st.Changes[0].Rule != "markdown-waits" {
		t.Fatalf("in the group, README.md = %+v, want ask by markdown-waits", st.Changes)
	}
	// Deleting the group leaves the task in none.
	must(t, c.Do(ctx, "DELETE", "/api/groups/"+g.ID, nil, nil))
	tk, err = d.k.LoadTask(id)
	must(t, err)
	if tk.Group != "" {
		t.Fatalf("after deleting its group the task is in %q", tk.Group)
	}
}

// TestApproveAndRememberFromReview keeps a manifest's approval as a rule:
// the next change to it passes.
func TestApproveAndRememberFromReview(t *testing.T) {
	t.Parallel()
	k := newKernel(t)
	d := startDaemon(t, Config{Kernel: k})
	ctx := context.Background()
	c := client.New(d.home)
	var made struct{ Task TaskView }
	must(t, c.Do(ctx, "POST", "/api/tasks", map[string]string{"folder": sampleFolder(t)}, &made))
	id := made.Task.ID
	var s Step
	must(t, c.Do(ctx, "POST", "/api/tasks/"+id+"/exec", ExecRequest{Command: "printf 'module x\\n' > go.mod"}, &s))
	verdict := func() string {
		var st struct{ Changes []ChangeView }
		must(t, c.Do(ctx, "GET", "/api/tasks/"+id, nil, &st))
		for _, cv := range st.Changes {
			if cv.Path == "go.mod" {
				return cv.Verdict
			}
		}
		return ""
	}
	if v := verdict(); v != "ask" {
		t.Fatalf("a new go.mod is %q, want ask", v)
	}
	var res struct {
		Applied    []string
		Remembered []string
	}
	must(t, c.Do(ctx, "POST", "/api/tasks/"+id+"/commit", CommitRequest{Remember: []string{"go.mod"}}, &res))
	if len(res.Applied) != 1 || len(res.Remembered) == 0 {
		t.Fatalf("approve and remember: %+v", res)
	}
	must(t, c.Do(ctx, "POST", "/api/tasks/"+id+"/exec", ExecRequest{Command: "printf 'module y\\n' > go.mod"}, &s))
	if v := verdict(); v != "pass" {
		t.Fatalf("after remembering, a change to go.mod is %q, want pass", v)
	}
}

// TestTwoTasksStartToMeet: when a run leaves two tasks on one folder
// changing the same file, the stream says so once.
func TestTwoTasksStartToMeet(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, Config{})
	folder := sampleFolder(t)
	a, err := d.k.NewTask(context.Background(), folder)
	must(t, err)
	b, err := d.k.NewTask(context.Background(), folder)
	must(t, err)
	ch, stop := d.Bus.Subscribe()
	defer stop()
	ctx := context.Background()
	run := func(tk *kernel.Task, script string) {
		_, err := d.Exec(ctx, tk, []string{"sh", "-c", script}, script)
		must(t, err)
	}
	run(a.Task, "echo a >> README.md")
	run(b.Task, "echo b > notes/other.md")
	run(b.Task, "echo b >> README.md")
	run(b.Task, "echo c >> README.md")
	var meets []string
	for len(ch) > 0 {
		if e := <-ch; e.Type == "meet" {
			meets = append(meets, fmt.Sprint(e.Task, e.Data.(map[string]any)["other"], e.Data.(map[string]any)["paths"]))
		}
	}
	want := fmt.Sprint(b.Task.ID, a.Task.ID, []string{"README.md"})
	if len(meets) != 1 || meets[0] != want {
		t.Fatalf("meet events %q, want one: %q", meets, want)
	}
}
