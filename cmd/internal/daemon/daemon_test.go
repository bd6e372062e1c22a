package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"

	"github.com/kulehq/kule/cmd/internal/daemon/client"
	"github.com/kulehq/kule/kernel"
)

// TestMain doubles as the helper processes: a daemon to kill, and a client
// run under another uid.
func TestMain(m *testing.M) {
	if os.Getenv("KULE_DAEMON_PEER") != "" {
		os.Exit(runPeer())
	}
	switch os.Getenv("GO_WANT_HELPER_PROCESS") {
	case "daemon":
		k, err := kernel.New(kernel.Config{Home: os.Getenv("KULE_HOME")})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		d, err := Start(Config{Kernel: k, Idle: -1, Log: hclog.New(&hclog.LoggerOptions{Name: "kuled", Output: os.Stderr})})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		d.Serve(context.Background())
		os.Exit(0)
	case "dial":
		// Exit 0: the daemon answered; 3: refused (at connect or by closing).
		c := client.New(os.Getenv("KULE_HOME"))
		var out map[string]any
		err := c.Do(context.Background(), "GET", "/api/health", nil, &out)
		if err != nil {
			fmt.Fprintln(os.Stderr, "refused:", err)
			os.Exit(3)
		}
		fmt.Println("answered", out["pid"])
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestSecondDaemonOnTheSameHomeRefuses(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, Config{})
	_, err := Start(Config{Kernel: d.k, Log: hclog.NewNullLogger()})
	if !errors.Is(err, ErrDaemonRunning) {
		t.Fatalf("second daemon: got %v, want ErrDaemonRunning", err)
	}
	// The first still serves on its socket.
	if !client.New(d.home).Running(context.Background()) {
		t.Fatal("the first daemon stopped answering after a second one tried to start")
	}
	st, err := os.Stat(SocketPath(d.home))
	must(t, err)
	if st.Mode().Perm() != 0o600 || st.Mode().Type() != fs.ModeSocket {
		t.Fatalf("socket mode %v, want a 0600 socket", st.Mode())
	}
}

// The socket is 0600 from its making, whatever the umask: its mode is set
// on the socket itself, not by the umask (the whole process's: a change of
// it reached the other goroutines' files). This guards the mechanism; the
// race it replaced cannot be caught in a test. Not parallel: it sets the
// umask.
func TestSocketIsPrivateUnderAnOpenUmask(t *testing.T) {
	old := unix.Umask(0)
	defer unix.Umask(old)
	d, err := Start(Config{Kernel: newKernel(t), Idle: -1, Log: hclog.NewNullLogger()})
	must(t, err)
	defer d.Shutdown()
	if now := unix.Umask(0); now != 0 {
		t.Errorf("the daemon left the umask %#o", now)
	}
	st, err := os.Stat(SocketPath(d.home))
	must(t, err)
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v under umask 0, want 0600", st.Mode())
	}
}

// TestOtherUserIsRefused runs a client as uid 65534 against the socket: with
// the socket's 0600 mode the kernel refuses it; with the mode opened up to
// 0666 (as if a person had loosened it), SO_PEERCRED still refuses it.
func TestOtherUserIsRefused(t *testing.T) {
	if os.Getuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("this test needs root to start a process as another user, and CI runs as root")
		}
		t.Skip("needs root to start a client as uid 65534")
	}
	d := startDaemon(t, Config{})
	// Let the other user reach the socket's directory and run our binary.
	for p := d.home; p != "/" && p != os.TempDir(); p = filepath.Dir(p) {
		must(t, os.Chmod(p, 0o711))
	}
	binDir, err := os.MkdirTemp("", "kule-peer-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(binDir) })
	must(t, os.Chmod(binDir, 0o755))
	self, err := os.Executable()
	must(t, err)
	bin := filepath.Join(binDir, "dial.test")
	b, err := os.ReadFile(self)
	must(t, err)
	must(t, os.WriteFile(bin, b, 0o755))

	dial := func(uid uint32) (int, string) {
		cmd := exec.Command(bin)
		cmd.Env = []string{"GO_WANT_HELPER_PROCESS=dial", "KULE_HOME=" + d.home}
		cmd.Dir = "/"
		if uid != 0 {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		}
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), string(out)
		}
		if err != nil {
			t.Fatalf("dial helper: %v: %s", err, out)
		}
		return 0, string(out)
	}
	if code, out := dial(0); code != 0 {
		t.Fatalf("the daemon's own user was refused: %s", out)
	}
	tests := map[string]os.FileMode{"socket 0600": 0o600, "socket loosened to 0666": 0o666}
	for name, mode := range tests {
		t.Run(name, func(t *testing.T) {
			must(t, os.Chmod(SocketPath(d.home), mode))
			code, out := dial(65534)
			if code != 3 {
				t.Fatalf("uid 65534 got through (exit %d): %s", code, out)
			}
			// With the mode loosened the kernel lets it connect: the refusal
			// must then be the daemon's own peer check, not a permission error.
			if denied := strings.Contains(out, "permission denied"); denied != (mode == 0o600) {
				t.Fatalf("uid 65534 refused the wrong way for mode %v: %s", mode, out)
			}
			t.Logf("refused: %s", strings.TrimSpace(out))
		})
	}
	must(t, os.Chmod(SocketPath(d.home), 0o600))
}

func TestIdleDaemonExits(t *testing.T) {
	t.Parallel()
	k := newKernel(t)
	d, err := Start(Config{Kernel: k, Idle: 200 * time.Millisecond, Log: hclog.NewNullLogger()})
	must(t, err)
	done := make(chan error, 1)
	go func() { done <- d.Serve(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		d.Shutdown()
		t.Fatal("an idle daemon did not exit")
	}
	if _, err := os.Stat(SocketPath(k.Home())); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket left behind after idle exit: %v", err)
	}
	// Its lock is free: a new daemon starts.
	d2, err := Start(Config{Kernel: k, Idle: -1, Log: hclog.NewNullLogger()})
	must(t, err)
	d2.Shutdown()
}

func TestOpenStreamKeepsDaemonUp(t *testing.T) {
	t.Parallel()
	k := newKernel(t)
	d, err := Start(Config{Kernel: k, Idle: 150 * time.Millisecond, Log: hclog.NewNullLogger()})
	must(t, err)
	// Held busy until the stream is open, so that the idle clock runs only
	// with the stream open (a slow first request could outlast 150 ms).
	release := d.busy()
	go d.Serve(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+d.Addr()+"/api/events", nil)
	req.Header.Set("Authorization", "Bearer "+d.Token())
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	for deadline := time.Now().Add(30 * time.Second); !d.Bus.Listening(); {
		if time.Now().After(deadline) {
			t.Fatal("waited 30 s for the event stream to listen")
		}
		time.Sleep(5 * time.Millisecond)
	}
	release()
	time.Sleep(600 * time.Millisecond) // several idle periods with the stream open
	select {
	case <-d.Done():
		t.Fatal("the daemon exited while the app's event stream was open")
	default:
	}
	cancel()
	select {
	case <-d.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the daemon did not exit once the stream closed")
	}
}

// TestKillAndRestartLosesNothing kills a daemon with SIGKILL while a
// question waits and checks the next daemon has the task and the question,
// with its deadline, and that it can be answered.
func TestKillAndRestartLosesNothing(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "home")
	must(t, os.MkdirAll(home, 0o700))
	folder := sampleFolder(t)
	start := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "GO_WANT_HELPER_PROCESS=daemon", "KULE_HOME="+home)
		must(t, cmd.Start())
		c := client.New(home)
		for i := 0; !c.Running(context.Background()); i++ {
			if i > 500 {
				cmd.Process.Kill()
				t.Fatal("helper daemon does not answer")
			}
			time.Sleep(20 * time.Millisecond)
		}
		return cmd
	}
	ctx := context.Background()
	c := client.New(home)
	first := start()
	var made struct{ Task TaskView }
	must(t, c.Do(ctx, "POST", "/api/tasks", map[string]string{"folder": folder}, &made))
	var step Step
	must(t, c.Do(ctx, "POST", "/api/tasks/"+made.Task.ID+"/exec", ExecRequest{Command: "echo more >> README.md"}, &step))
	var q Question
	must(t, c.Do(ctx, "POST", "/api/questions", Question{Task: made.Task.ID, Kind: "connection", Title: "Connect to example.org:443?", Subject: "example.org:443"}, &q))

	must(t, first.Process.Signal(syscall.SIGKILL))
	first.Wait()
	second := start()
	defer func() { second.Process.Kill(); second.Wait() }()

	var tasks []TaskView
	must(t, c.Do(ctx, "GET", "/api/tasks", nil, &tasks))
	if len(tasks) != 1 || tasks[0].ID != made.Task.ID || tasks[0].Changes != 1 || tasks[0].Waiting != 1 {
		t.Fatalf("after restart tasks = %+v, want task %s with 1 change and 1 waiting question", tasks, made.Task.ID)
	}
	var qs []Question
	must(t, c.Do(ctx, "GET", "/api/questions", nil, &qs))
	if len(qs) != 1 || qs[0].ID != q.ID || qs[0].State != Waiting || !qs[0].Deadline.Equal(q.Deadline) {
		t.Fatalf("after restart questions = %+v, want %s waiting with deadline %v", qs, q.ID, q.Deadline)
	}
	// The asker comes back with the same question: it is the same one.
	var again Question
	must(t, c.Do(ctx, "POST", "/api/questions", Question{Task: made.Task.ID, Kind: "connection", Title: "Connect to example.org:443?", Subject: "example.org:443"}, &again))
	if again.ID != q.ID {
		t.Fatalf("a repeated question after restart made a new one (%s, want %s)", again.ID, q.ID)
	}
	var ans Question
	must(t, c.Do(ctx, "POST", "/api/questions/"+q.ID+"/answer", Decision{Approve: true}, &ans))
	if ans.State != Approved || ans.By != "person" {
		t.Fatalf("answer = %+v", ans)
	}
}

// TestHTTPGuard attacks the app port: no token, a wrong one, another origin,
// another Host (DNS rebinding), a cross-site fetch.
func TestHTTPGuard(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, Config{})
	base := "http://" + d.Addr()
	good := &http.Cookie{Name: cookieName, Value: d.Token()}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	tests := map[string]struct {
		path   string
		cookie *http.Cookie
		header map[string]string
		host   string
		want   int
	}{
		"api without token":          {path: "/api/tasks", want: 401},
		"app page without token":     {path: "/", want: 401},
		"script without token":       {path: "/app.js", want: 401},
		"api with a wrong token":     {path: "/api/tasks", cookie: &http.Cookie{Name: cookieName, Value: strings.Repeat("0", 48)}, want: 401},
		"url with a wrong launch":    {path: "/?launch=" + strings.Repeat("A", 26), want: 401},
		"the session token as a url": {path: "/?token=" + d.Token(), want: 401}, // what a browser's history kept
		"the session token as code":  {path: "/?launch=" + d.Token(), want: 401},
		"api with the token":         {path: "/api/tasks", cookie: good, want: 200},
		"bearer token":               {path: "/api/tasks", header: map[string]string{"Authorization": "Bearer " + d.Token()}, want: 200},
		"same origin":                {path: "/api/tasks", cookie: good, header: map[string]string{"Origin": base}, want: 200},
		"foreign origin":             {path: "/api/tasks", cookie: good, header: map[string]string{"Origin": "http://evil.example"}, want: 403},
		"foreign origin same host":   {path: "/api/tasks", cookie: good, header: map[string]string{"Origin": "http://127.0.0.1:1"}, want: 403},
		"null origin":                {path: "/api/tasks", cookie: good, header: map[string]string{"Origin": "null"}, want: 403},
		"cross-site fetch":           {path: "/api/tasks", cookie: good, header: map[string]string{"Sec-Fetch-Site": "cross-site"}, want: 403},
		"rebinding host":             {path: "/api/tasks", cookie: good, host: "evil.example:" + strings.Split(d.Addr(), ":")[1], want: 421},
		"questions posted over http": {path: "/api/questions", cookie: good, want: 200}, // GET lists; POST is refused below
		"app address over http":      {path: "/api/app", cookie: good, want: 400},
		"launch code sets cookie":    {path: strings.TrimPrefix(d.URL(), base), want: 303},
		"localhost is another host":  {path: "/api/tasks", cookie: good, host: "localhost:" + strings.Split(d.Addr(), ":")[1], want: 421},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", base+tc.path, nil)
			if tc.cookie != nil {
				req.AddCookie(tc.cookie)
			}
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := noRedirect.Do(req)
			must(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, body)
			}
			if tc.want == 303 {
				sc := resp.Cookies()
				if len(sc) != 1 || sc[0].Value != d.Token() || !sc[0].HttpOnly || sc[0].SameSite != http.SameSiteStrictMode || sc[0].Path != "/" || sc[0].Domain != "" {
					t.Fatalf("cookie = %+v, want the token, HttpOnly, SameSite=Strict, Path=/, host-only", sc)
				}
				if loc := resp.Header.Get("Location"); loc != "/" {
					t.Fatalf("redirect to %q, want / (nothing of the launch in the address)", loc)
				}
			}
		})
	}
	// A question cannot be posted over the HTTP port, even with the token.
	req, _ := http.NewRequest("POST", base+"/api/questions", strings.NewReader(`{"task":"x","kind":"k","title":"t"}`))
	req.AddCookie(good)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("question posted over http: %d", resp.StatusCode)
	}
	// A change sent as a form or text/plain (what another page can send
	// without a preflight) is refused even with the token.
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""} {
		req, _ := http.NewRequest("POST", base+"/api/tasks", strings.NewReader(`{"folder":"/tmp"}`))
		req.AddCookie(good)
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnsupportedMediaType {
			t.Fatalf("POST as %q: %d, want 415", ct, resp.StatusCode)
		}
	}
}

// noSecrets is a repository's own rule (.kule/policy.cedar in the real
// folder) that denies files ending in .secret.
const noSecrets = `@id("no-secrets")
@verdict("deny")
@reason("secrets stay out of the folder")
forbid (principal, action, resource is Kule::Path) when { resource.ext == "secret" };
`

// TestCommitFollowsVerdicts: Review shows the kernel's ruling (the built-in
// policy asks about go.mod; the repository's own rule denies *.secret), a
// plain commit applies what passes, Approve and commit what asks, never
// what is denied — and the commit's own history entry says who approved
// which path.
func TestCommitFollowsVerdicts(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, Config{Reviewer: StaticReviewer{"README.md": {"# Project"}}})
	ctx := context.Background()
	c := client.New(d.home)
	folder := sampleFolder(t)
	must(t, os.MkdirAll(filepath.Join(folder, ".kule"), 0o755))
	must(t, os.WriteFile(filepath.Join(folder, ".kule", "policy.cedar"), []byte(noSecrets), 0o644))
	var made struct{ Task TaskView }
	must(t, c.Do(ctx, "POST", "/api/tasks", map[string]string{"folder": folder}, &made))
	id := made.Task.ID
	var step Step
	must(t, c.Do(ctx, "POST", "/api/tasks/"+id+"/exec", ExecRequest{Command: "echo more >> README.md; echo 'module x' > go.mod; echo k > a.secret"}, &step))
	if step.Code != 0 {
		t.Fatalf("exec: %+v", step)
	}
	var st struct{ Changes []ChangeView }
	must(t, c.Do(ctx, "GET", "/api/tasks/"+id, nil, &st))
	got := map[string]string{}
	for _, cv := range st.Changes {
		got[cv.Path] = cv.Verdict + " " + strings.Join(cv.Names, ",")
	}
	want := map[string]string{"README.md": "pass # Project", "go.mod": "ask ", "a.secret": "deny "}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("verdicts and names = %v, want %v", got, want)
	}
	var res struct {
		Applied []string
		Left    []string
	}
	must(t, c.Do(ctx, "POST", "/api/tasks/"+id+"/commit", CommitRequest{}, &res))
	if len(res.Applied) != 1 || !strings.Contains(res.Applied[0], "README.md") {
		t.Fatalf("plain commit applied %v, want README.md only", res.Applied)
	}
	must(t, c.Do(ctx, "POST", "/api/tasks/"+id+"/commit", CommitRequest{ApproveAll: true}, &res))
	if len(res.Applied) != 1 || !strings.Contains(res.Applied[0], "go.mod") {
		t.Fatalf("approve and commit applied %v, want go.mod only", res.Applied)
	}
	if _, err := os.Stat(filepath.Join(made.Task.Folder, "a.secret")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a denied file reached the folder: %v", err)
	}
	var hist struct {
		Entries []struct {
			Kind string
			Data struct{ Approval *kernel.Approval }
		}
	}
	must(t, c.Do(ctx, "GET", "/api/tasks/"+id+"/history", nil, &hist))
	var kinds []string
	for _, e := range hist.Entries {
		kinds = append(kinds, e.Kind)
	}
	if strings.Join(kinds, ",") != "commit,commit" {
		t.Fatalf("history kinds %v, want commit,commit (the approval inside the second)", kinds)
	}
	if a := hist.Entries[0].Data.Approval; a != nil {
		t.Fatalf("the plain commit records an approval: %+v", a)
	}
	if a := hist.Entries[1].Data.Approval; a == nil || a.By != "app" || fmt.Sprint(a.Paths) != "[go.mod]" {
		t.Fatalf("the approved commit's entry records %+v, want go.mod approved by the app", a)
	}
}

// TestAppCommitRefusesWithoutAPolicy: a policy that cannot be read is no
// policy: the app shows no verdict as passing and its commit applies
// nothing, saying what to fix. With the commit's judging taken away
// (commitsJudged off), the same commit let the change through: the guard is
// what keeps the folder safe, not the test's setup.
func TestAppCommitRefusesWithoutAPolicy(t *testing.T) {
	for _, guarded := range []bool{false, true} {
		commitsJudged = guarded
		d := startDaemon(t, Config{})
		ctx := context.Background()
		c := client.New(d.home)
		folder := sampleFolder(t)
		var made struct{ Task TaskView }
		must(t, c.Do(ctx, "POST", "/api/tasks", map[string]string{"folder": folder}, &made))
		var step Step
		must(t, c.Do(ctx, "POST", "/api/tasks/"+made.Task.ID+"/exec", ExecRequest{Command: "echo more >> README.md"}, &step))
		must(t, os.WriteFile(d.k.PersonPolicyPath(), []byte("permit (principal, action, resource) when { nonsense };\n"), 0o600))
		err := c.Do(ctx, "POST", "/api/tasks/"+made.Task.ID+"/commit", CommitRequest{ApproveAll: true}, nil)
		commitsJudged = true
		b, _ := os.ReadFile(filepath.Join(folder, "README.md"))
		if !guarded {
			if err != nil || !strings.Contains(string(b), "more") {
				t.Fatalf("without the commit's judging the change should go in (the attack): %v, README.md %q", err, b)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "nothing was applied") || !strings.Contains(err.Error(), "policy") {
			t.Fatalf("a commit with an unreadable policy: %v, want a refusal naming the policy", err)
		}
		if strings.Contains(string(b), "more") {
			t.Fatal("a commit with an unreadable policy changed the folder")
		}
		if err := c.Do(ctx, "GET", "/api/tasks/"+made.Task.ID, nil, nil); err == nil || !strings.Contains(err.Error(), "nothing can be committed") {
			t.Fatalf("Review with an unreadable policy: %v, want the policy's error", err)
		}
	}
}

// TestApprovalOnlyLetsInWhatWasApproved: between the person's Review and
// the commit, README.md comes to ask (the repository's rule changed). The
// person approved go.mod only; the kernel, judging again under its locks,
// lets in go.mod and keeps README.md in the copy. Without the approved
// paths handed to the kernel, approving go.mod let README.md in unseen.
func TestApprovalOnlyLetsInWhatWasApproved(t *testing.T) {
	for _, guarded := range []bool{false, true} {
		approvalLimits = guarded
		d := startDaemon(t, Config{})
		ctx := context.Background()
		c := client.New(d.home)
		folder := sampleFolder(t)
		var made struct{ Task TaskView }
		must(t, c.Do(ctx, "POST", "/api/tasks", map[string]string{"folder": folder}, &made))
		var step Step
		must(t, c.Do(ctx, "POST", "/api/tasks/"+made.Task.ID+"/exec", ExecRequest{Command: "echo more >> README.md; echo 'module x' > go.mod"}, &step))
		afterJudging = func(*kernel.Task) {
			must(t, os.MkdirAll(filepath.Join(folder, ".kule"), 0o755))
			must(t, os.WriteFile(filepath.Join(folder, ".kule", "policy.cedar"), []byte(`@id("readme-asks")
@verdict("ask")
forbid (principal, action, resource is Kule::Path) when { resource.name == "README.md" };
`), 0o644))
		}
		var res struct{ Applied []string }
		err := c.Do(ctx, "POST", "/api/tasks/"+made.Task.ID+"/commit", CommitRequest{Approve: []string{"go.mod"}}, &res)
		afterJudging = func(*kernel.Task) {}
		approvalLimits = true
		must(t, err)
		b, _ := os.ReadFile(filepath.Join(folder, "README.md"))
		in := strings.Contains(string(b), "more")
		if guarded && in {
			t.Fatalf("README.md, which asked and nobody approved, reached the folder (applied %v)", res.Applied)
		}
		if !guarded && !in {
			t.Fatalf("without the approved paths handed to the kernel README.md should go in (the attack); applied %v", res.Applied)
		}
		if _, err := os.Stat(filepath.Join(folder, "go.mod")); err != nil {
			t.Fatalf("the approved go.mod did not go in: %v (applied %v)", err, res.Applied)
		}
	}
}

func TestReorderKeepsOrderInTaskJSON(t *testing.T) {
	t.Parallel()
	k := newKernel(t)
	var ids []string
	for range 3 {
		rep, err := k.NewTask(context.Background(), sampleFolder(t))
		must(t, err)
		ids = append(ids, rep.Task.ID)
		time.Sleep(2 * time.Millisecond) // distinct creation times
	}
	must(t, Reorder(k, ids[2], -1))
	must(t, Reorder(k, ids[2], -5)) // clamps at the top
	must(t, Reorder(k, ids[0], 1))
	ts, err := k.Tasks()
	must(t, err)
	var got []string
	for _, t := range ts {
		got = append(got, t.ID)
	}
	want := []string{ids[2], ids[1], ids[0]}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	b, err := os.ReadFile(filepath.Join(k.TaskDir(ids[0]), "task.json"))
	must(t, err)
	var tj struct{ Order int }
	must(t, json.Unmarshal(b, &tj))
	if tj.Order != 3 {
		t.Fatalf("task.json order %d, want 3", tj.Order)
	}
}

func TestEventsStream(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, Config{})
	conn, err := net.Dial("unix", SocketPath(d.home))
	must(t, err)
	defer conn.Close()
	fmt.Fprintf(conn, "GET /api/events HTTP/1.1\r\nHost: kuled\r\n\r\n")
	buf := make([]byte, 4096)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := conn.Read(buf) // headers and the hello comment
	must(t, err)
	if !strings.Contains(string(buf[:n]), "text/event-stream") {
		t.Fatalf("not an event stream: %s", buf[:n])
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		d.Bus.Publish("connection", "abcd1234", map[string]string{"host": "example.org:443", "verdict": "ask"})
	}()
	var got string
	for !strings.Contains(got, "example.org:443") {
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("stream ended before the event: %v (%q)", err, got)
		}
		got += string(buf[:n])
	}
	if !strings.Contains(got, "event: connection") {
		t.Fatalf("event lacks its type: %q", got)
	}
}

func TestRunnerForRefusalRunsNothing(t *testing.T) {
	t.Parallel()
	refuse := errors.New("sandbox: no user namespaces here")
	d := startDaemon(t, Config{RunnerFor: func(*kernel.Task, *kernel.RunSpec) (kernel.Runner, error) { return nil, refuse }})
	rep, err := d.k.NewTask(context.Background(), sampleFolder(t))
	must(t, err)
	_, err = d.Exec(context.Background(), rep.Task, []string{"/bin/sh", "-c", "echo x > made.txt"}, "echo")
	if !errors.Is(err, refuse) {
		t.Fatalf("exec with a refusing runner: %v", err)
	}
	if _, err := os.Stat(filepath.Join(rep.Task.Paths.Copy, "made.txt")); err == nil {
		t.Fatal("the command ran although its runner was refused")
	}
}

// A file that appears in the copy after the app judged its status stays in
// the copy: a commit applies only what was judged.
func TestCommitLeavesWhatAppearedAfterJudging(t *testing.T) {
	d := startDaemon(t, Config{})
	ctx := context.Background()
	c := client.New(d.home)
	folder := sampleFolder(t)
	var made struct{ Task TaskView }
	must(t, c.Do(ctx, "POST", "/api/tasks", map[string]string{"folder": folder}, &made))
	var step Step
	must(t, c.Do(ctx, "POST", "/api/tasks/"+made.Task.ID+"/exec", ExecRequest{Command: "echo more >> README.md"}, &step))
	afterJudging = func(tk *kernel.Task) {
		must(t, os.WriteFile(filepath.Join(tk.Paths.Copy, "late.txt"), []byte("unjudged"), 0o644))
	}
	defer func() { afterJudging = func(*kernel.Task) {} }()
	var res struct{ Applied []string }
	must(t, c.Do(ctx, "POST", "/api/tasks/"+made.Task.ID+"/commit", CommitRequest{ApproveAll: true}, &res))
	if _, err := os.Stat(filepath.Join(folder, "late.txt")); err == nil {
		t.Fatalf("a file nobody judged reached the folder (applied %v)", res.Applied)
	}
	if len(res.Applied) != 1 || !strings.Contains(res.Applied[0], "README.md") {
		t.Fatalf("applied %v, want README.md", res.Applied)
	}
}
