package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kulehq/kule/kernel"
)

// lookAt draws the page at 1000×700 and keeps the picture (its path in the
// log), for a person to look at what the test saw.
func lookAt(t *testing.T, ctx context.Context, shot func(string), name string) {
	t.Helper()
	step(t, ctx, shot, "a window of 1000×700", chromedp.EmulateViewport(1000, 700))
	b := value(t, ctx, shot, "screenshot "+name, chromedp.CaptureScreenshot())
	dir := filepath.Join(os.TempDir(), "kule-e2e-shots")
	must(t, os.MkdirAll(dir, 0o755))
	p := filepath.Join(dir, name+".png")
	must(t, os.WriteFile(p, b, 0o644))
	t.Logf("picture: %s", p)
}

// graduatedHome is a daemon whose memory holds two tasks' approved go.mod
// changes, committed and kept weeks ago (the memory's clock set back), on a
// home whose [graduation] asks for two successes in two tasks: the
// manifests category meets every threshold.
func graduatedHome(t *testing.T) (*Daemon, *kernel.Kernel, string) {
	t.Helper()
	k := newKernel(t)
	must(t, os.WriteFile(filepath.Join(k.Home(), "config.toml"), []byte("[graduation]\nmin_successes = 2\nmin_distinct_tasks = 2\n"), 0o600))
	st, err := k.Memory()
	must(t, err)
	// The daemon reads the clock too (its start looks for interrupted
	// runs), so it is set once, before the daemon starts; 0 is now.
	var now atomic.Int64
	now.Store(time.Now().Add(-30 * 24 * time.Hour).UnixNano())
	st.SetClock(func() time.Time {
		if n := now.Load(); n != 0 {
			return time.Unix(0, n)
		}
		return time.Now()
	})
	d := startDaemon(t, Config{Kernel: k})
	folder := sampleFolder(t)
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		rep, err := k.NewTask(ctx, folder)
		must(t, err)
		if _, err := d.Exec(ctx, rep.Task, []string{"sh", "-c", fmt.Sprintf(`echo "module m%d" > go.mod`, i)}, "bump the module"); err != nil {
			t.Fatal(err)
		}
		cr, err := k.Commit(ctx, rep.Task, kernel.CommitOptions{Policy: true, Approve: true})
		must(t, err)
		if len(cr.Applied) != 1 {
			t.Fatalf("applied %v", cr.Applied)
		}
		now.Add(int64(3 * 24 * time.Hour))
	}
	now.Store(0)
	return d, k, folder
}

// TestAppAcceptsAGraduationProposal: in a real Chromium, a category that
// met the thresholds waits under Needs you with its evidence (each run, its
// task, when it ended and was committed). Not now sets it aside for the
// page only; Accept makes the remembered rule, graduated, as kule rules
// accept does, and the card goes. A later commit in that category undone
// withdraws the rule, and Needs you says it asks again.
func TestAppAcceptsAGraduationProposal(t *testing.T) {
	ctx, shot := browser(t)
	d, k, folder := graduatedHome(t)
	rep, err := k.ReviewGraduation(context.Background(), "")
	must(t, err)
	if len(rep.Proposals) != 1 {
		t.Fatalf("the fixture should make one proposal: %+v", rep.Proposals)
	}
	prop := rep.Proposals[0]
	card := `#needs li[data-proposal="` + prop.ID + `"]`
	step(t, ctx, shot, "open the app", chromedp.Navigate(d.URL()), chromedp.WaitVisible(chromedp.CSS(card)), clickOf(card+` details summary`))
	got := value(t, ctx, shot, "the card", textOf(card))
	for _, want := range []string{"Ask no more about manifests-and-lockfiles in " + folder, "2 times in 2 tasks", "The evidence: 2 runs",
		fmt.Sprintf("run %d · task ", prop.Evidence[0].Run), fmt.Sprintf("run %d · task ", prop.Evidence[1].Run), "kept since", "Accept", "Not now"} {
		if !strings.Contains(got, want) {
			t.Errorf("the proposal's card lacks %q:\n%s", want, got)
		}
	}
	lookAt(t, ctx, shot, "needs-proposal")
	step(t, ctx, shot, "not now", clickOf(card+` button:not(.primary)`), void(chromedp.Poll[bool](`!document.querySelector('`+card+`')`)))
	if rs := rules(t, d); strings.Contains(rs, prop.ID) {
		t.Fatalf("Not now made a rule: %s", rs)
	}
	step(t, ctx, shot, "proposed again when the page opens again", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(card+` button.primary`)))
	step(t, ctx, shot, "accept", clickOf(card+` button.primary`), void(chromedp.Poll[bool](`!document.querySelector('`+card+`')`)))
	if rs := rules(t, d); !strings.Contains(rs, prop.ID) {
		t.Fatalf("Accept made no graduated rule: %s", rs)
	}
	if toast := value(t, ctx, shot, "the toast", textOf(`#toasts`)); !strings.Contains(toast, "one failure in manifests-and-lockfiles") {
		t.Errorf("the toast: %q", toast)
	}
	if again, _ := k.ReviewGraduation(context.Background(), ""); len(again.Proposals) != 0 {
		t.Fatalf("still proposed after Accept: %+v", again.Proposals)
	}

	// The rule lets the next go.mod change pass; that commit undone, it is
	// withdrawn and Needs you says so.
	next, err := k.NewTask(context.Background(), folder)
	must(t, err)
	if _, err := d.Exec(context.Background(), next.Task, []string{"sh", "-c", `echo "module next" > go.mod`}, "bump again"); err != nil {
		t.Fatal(err)
	}
	if cr, err := k.Commit(context.Background(), next.Task, kernel.CommitOptions{Policy: true}); err != nil || len(cr.Applied) != 1 {
		t.Fatalf("the graduated rule should let go.mod pass: %+v %v", cr, err)
	}
	if code, body := call(t, d, "POST", "/api/tasks/"+next.Task.ID+"/undo", "{}"); code != 200 {
		t.Fatalf("undo: %d %s", code, body)
	}
	demoted := `#needs li[data-demotion]`
	step(t, ctx, shot, "the demotion is said", chromedp.WaitVisible(chromedp.CSS(demoted)))
	got = value(t, ctx, shot, "the demotion", textOf(demoted))
	for _, want := range []string{"Kule asks again about manifests-and-lockfiles", "Its commit was undone (run ", "accepted as " + prop.ID + " was withdrawn"} {
		if !strings.Contains(got, want) {
			t.Errorf("the demotion's card lacks %q:\n%s", want, got)
		}
	}
	if rs := rules(t, d); strings.Contains(rs, prop.ID) {
		t.Fatalf("the undo left the graduated rule: %s", rs)
	}
	if toast := value(t, ctx, shot, "the notice", textOf(`#toasts`)); !strings.Contains(toast, "Kule asks again about manifests-and-lockfiles in "+folder+": its commit was undone") {
		t.Errorf("the demotion's notice: %q", toast)
	}
	lookAt(t, ctx, shot, "needs-demotion")
	step(t, ctx, shot, "noted", clickOf(demoted+` button`), void(chromedp.Poll[bool](`!document.querySelector('`+demoted+`')`)))
	step(t, ctx, shot, "noted stays noted", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`#task-list li`)), chromedp.Sleep(500*time.Millisecond))
	if n := value(t, ctx, shot, "no demotion", chromedp.Evaluate[int](`document.querySelectorAll('`+demoted+`').length`)); n != 0 {
		t.Fatalf("a noted demotion came back: %d", n)
	}
}

// rules are the remembered rules as kule rules lists them, one a line.
func rules(t *testing.T, d *Daemon) string {
	t.Helper()
	rs, err := d.k.RememberedRules()
	must(t, err)
	var b strings.Builder
	for _, r := range rs {
		b.WriteString(r.String() + "\n")
	}
	return b.String()
}

// TestAppSaysALeaseIsSpent: a task's lease of a secret ran out with no
// renewal left, so the proxy is refused the secret; the task's row and
// Needs you say so, and Grant gives one more renewal (kule secrets grant's
// call), which the held lease takes at once: the next request has the
// secret again, and the card goes.
func TestAppSaysALeaseIsSpent(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	t.Setenv("KULE_SECRETS_KEYFILE", "1")
	ctx, shot := browser(t)
	k := newKernel(t)
	d := startDaemon(t, Config{Kernel: k})
	st, err := kernel.OpenSecrets(k.Home())
	must(t, err)
	_, err = st.AddLeased("CLOUD_TOKEN", "tok-1", []string{"api.cloud.test"}, kernel.LeaseSpec{Every: time.Second, Renewals: 2})
	must(t, err)
	rep, err := k.NewTask(context.Background(), sampleFolder(t))
	must(t, err)
	tk := rep.Task
	sec, err := st.Get("CLOUD_TOKEN")
	must(t, err)
	// What a run's proxy holds, with its renewals used up.
	held, err := st.Leases().Acquire(context.Background(), sec, tk.ID, 0)
	must(t, err)
	t.Cleanup(func() { held.Release(context.Background()) })
	waitFor(t, "the lease to run out", func() bool {
		_, err := held.Value(context.Background())
		return errors.Is(err, kernel.ErrLeaseSpent)
	})
	card := `#needs li[data-lease="` + tk.ID + `/CLOUD_TOKEN"]`
	step(t, ctx, shot, "open the app", chromedp.Navigate(d.URL()), chromedp.WaitVisible(chromedp.CSS(card)),
		chromedp.WaitVisible(chromedp.CSS(`#task-list [data-lease-task="`+tk.ID+`"]`)))
	got := value(t, ctx, shot, "the card", textOf(card))
	for _, want := range []string{"The lease of CLOUD_TOKEN is spent", "requests to api.cloud.test that need it are refused", "kule secrets grant " + tk.ID + " CLOUD_TOKEN", "refused now"} {
		if !strings.Contains(got, want) {
			t.Errorf("the lease's card lacks %q:\n%s", want, got)
		}
	}
	lookAt(t, ctx, shot, "needs-lease")
	step(t, ctx, shot, "grant", clickOf(card+` button.primary`), void(chromedp.Poll[bool](`!document.querySelector('`+card+`') && !document.querySelector('#task-list [data-lease-task]')`)))
	if v, err := held.Value(context.Background()); err != nil || v != "tok-1" {
		t.Fatalf("after the grant the held lease should renew: %q %v", v, err)
	}
}

// TestAppRecallsBeforeARun: while a prompt for an agent is typed, the app
// shows what memory recalls — a failure on the folder with the fix that
// followed, and the budget similar runs propose — and the run is not held
// by it: Enter sends the prompt and the agent is given the same notes.
// Set this budget makes the proposal the task's cap.
func TestAppRecallsBeforeARun(t *testing.T) {
	ctx, shot := browser(t)
	k := newKernel(t)
	cfg := Config{Kernel: k}
	withPeerScript(t, &cfg, "resume", "")
	d := startDaemon(t, cfg)
	bg := context.Background()
	rep, err := k.NewTask(bg, sampleFolder(t))
	must(t, err)
	tk := rep.Task
	if s, err := d.Exec(bg, tk, []string{"sh", "-c", "echo 'make: *** [build] Error 2: missing helper.h' >&2; exit 2"}, "make"); err != nil || s.Code != 2 {
		t.Fatalf("the failing build: %+v %v", s, err)
	}
	if s, err := d.Exec(bg, tk, []string{"sh", "-c", "echo '#define HELPER 1' > helper.h"}, "add helper.h"); err != nil || s.Code != 0 {
		t.Fatalf("the fix: %+v %v", s, err)
	}
	for _, c := range []float64{0.40, 0.80, 1.00} {
		id := k.MemoryRunStarted(tk, kernel.MemoryRun{Agent: "peer", Prompt: "fix the build of the helper"})
		k.MemoryRunEnded(tk, id, kernel.MemoryRunEnd{StopReason: "end_turn", Cost: []kernel.Money{{Amount: c, Currency: "USD"}}})
	}
	rec, err := k.Recall(bg, tk, "fix the build error")
	must(t, err)
	if len(rec.Notes) == 0 || rec.BudgetLine() == "" {
		t.Fatalf("the fixture should give notes and a budget: %+v", rec)
	}

	step(t, ctx, shot, "open the task and choose the agent",
		chromedp.Navigate(d.URL()),
		clickOf(`#task-list li[data-id="`+tk.ID+`"]`),
		void(chromedp.Poll[bool](`[...document.querySelectorAll('#agent option')].some((o) => o.value === 'peer' && !o.disabled)`)),
		chromedp.SetValue(chromedp.CSS(`#agent`), "peer"),
		void(chromedp.Evaluate[bool](`document.getElementById('agent').dispatchEvent(new Event('change')), true`)),
		chromedp.SendKeys(chromedp.CSS(`#cmd`), "fix the build error"),
		chromedp.WaitVisible(chromedp.CSS(`.console .recall`)))
	got := value(t, ctx, shot, "the recall", textOf(`.console .recall`))
	for _, want := range []string{"Kule recalls one earlier failure", "the agent is given it after your prompt", "Error 2: missing helper.h", "helper.h",
		"proposed budget $1.30", "The task has no budget of its own", "Set this budget"} {
		if !strings.Contains(got, want) {
			t.Errorf("the recall lacks %q:\n%s", want, got)
		}
	}
	lookAt(t, ctx, shot, "recall-before-run")
	step(t, ctx, shot, "set the budget", clickOf(`.console .recall button`),
		void(chromedp.Poll[bool](`document.querySelector('.console .recall').innerText.includes("The task's budget now: USD 1.30") || document.querySelector('.console .recall').innerText.includes("budget now: $1.30")`)))
	if c, err := kernel.TaskCap(tk.Paths.Dir); err != nil || c == nil || c.Amount != 1.30 {
		t.Fatalf("the task's cap: %+v %v", c, err)
	}
	step(t, ctx, shot, "send", chromedp.SendKeys(chromedp.CSS(`#cmd`), "\r"))
	var said string
	waitFor(t, "the agent's prompt", func() bool { said = readFile(filepath.Join(tk.Paths.Copy, "resumed.txt")); return said != "" })
	if !strings.Contains(said, "fix the build error") || !strings.Contains(said, kernel.MemoryNotesHeader) || !strings.Contains(said, "Error 2: missing helper.h") {
		t.Fatalf("the agent was not given the notes the page showed:\n%s", said)
	}
	if hidden := value(t, ctx, shot, "the recall after sending", chromedp.Evaluate[bool](`document.querySelector('.console .recall').hidden`)); !hidden {
		t.Fatal("the recall of a sent prompt stays")
	}
	// The chat's prompt box shows the same recall.
	waitFor(t, "the turn to end", func() bool { return !d.runs.running(tk.ID) })
	step(t, ctx, shot, "the chat recalls too",
		chromedp.KeyEvent("j", chromedp.KeyModifiers(chromedp.ModifierCtrl, chromedp.ModifierShift)),
		chromedp.WaitVisible(chromedp.CSS(`#chat-input`)),
		void(chromedp.Poll[bool](`document.getElementById('chat-agent').value === 'peer'`)),
		chromedp.SendKeys(chromedp.CSS(`#chat-input`), "the build error again"),
		void(chromedp.Poll[bool](`(() => { const r = document.querySelector('.chat-panel .recall'); return !!r && !r.hidden && r.innerText.includes('Error 2: missing helper.h') })()`)))
	lookAt(t, ctx, shot, "recall-in-chat")
}

// TestAppShowsTheQuestionsAResumedRunLeft: an interrupted turn that left
// permission questions unanswered lists them on its card under Needs you;
// resumed, Live says them too, as the resumed agent is told.
func TestAppShowsTheQuestionsAResumedRunLeft(t *testing.T) {
	ctx, shot := browser(t)
	k := newKernel(t)
	cfg := Config{Kernel: k}
	withPeerScript(t, &cfg, "resume", "")
	rep, err := k.NewTask(context.Background(), sampleFolder(t))
	must(t, err)
	tk := rep.Task
	id := k.MemoryRunStarted(tk, kernel.MemoryRun{Agent: "peer", Session: "s1", Prompt: "write the release notes"})
	if id == 0 {
		t.Fatal("the run was not recorded")
	}
	k.MemoryProgress(id, kernel.MemoryProgress{Pending: []kernel.MemoryQuestion{{Title: "Write notes/release.md", Kind: "edit"}, {Title: "Run make docs", Kind: "execute"}}})
	must(t, k.CloseMemory())
	d := startDaemon(t, cfg)
	card := `#needs li[data-interrupted]`
	step(t, ctx, shot, "open the app", chromedp.Navigate(d.URL()), chromedp.WaitVisible(chromedp.CSS(card+` .pending`)))
	got := value(t, ctx, shot, "the card", textOf(card))
	for _, want := range []string{"2 questions never answered", "Still waiting when it stopped", "Write notes/release.md", "Run make docs"} {
		if !strings.Contains(got, want) {
			t.Errorf("the interrupted run's card lacks %q:\n%s", want, got)
		}
	}
	lookAt(t, ctx, shot, "needs-pending")
	step(t, ctx, shot, "resume", clickOf(card+` button.primary`),
		void(chromedp.Poll[bool](`document.getElementById('live').innerText.includes('“Write notes/release.md”, “Run make docs”')`)))
	waitFor(t, "the resumed turn", func() bool {
		return strings.HasPrefix(readFile(filepath.Join(tk.Paths.Copy, "resumed.txt")), "loaded=s1\n")
	})
	if said := readFile(filepath.Join(tk.Paths.Copy, "resumed.txt")); !strings.Contains(said, "edit") || !strings.Contains(said, "execute") {
		t.Fatalf("the resumed agent was not told of the questions:\n%s", said)
	}
}

// TestAppReviewSaysRefusedNotes: an extension's hook returns a note about
// a path outside the review; Kule drops it, and Review says so in words
// under the changes, beside the notes it kept.
func TestAppReviewSaysRefusedNotes(t *testing.T) {
	ctx, shot := browser(t)
	k := newKernel(t)
	var launches atomic.Int32
	d := startDaemon(t, Config{Kernel: k, Extensions: inProcessHosts(t, k, &launches)})
	installExtension(t, d, notesFiles, true)
	rep, err := d.k.NewTask(context.Background(), sampleFolder(t))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(rep.Task.Paths.Copy, "todo.txt"), []byte("x\n"), 0o644))
	_, body := call(t, d, "GET", "/api/tasks/"+rep.Task.ID, "")
	var st struct {
		Warnings []string `json:"note_warnings"`
	}
	must(t, json.Unmarshal([]byte(body), &st))
	if len(st.Warnings) != 1 {
		t.Fatalf("the fixture should make one warning: %s", body)
	}
	step(t, ctx, shot, "open Review",
		chromedp.Navigate(d.URL()),
		clickOf(`#task-list li[data-id="`+rep.Task.ID+`"]`),
		chromedp.KeyEvent("2", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.WaitVisible(chromedp.CSS(`#changes li[data-path="todo.txt"] .ext-note`)),
		chromedp.WaitVisible(chromedp.CSS(`#v-review #r-note-warnings`)))
	got := value(t, ctx, shot, "the warnings", textOf(`#r-note-warnings`))
	for _, want := range []string{"Some notes from extensions are not shown (one warning): Kule refused or cut them", "me.notes: 1 notes dropped", "a path outside the review"} {
		if !strings.Contains(got, want) {
			t.Errorf("the warnings lack %q:\n%s", want, got)
		}
	}
	if after := value(t, ctx, shot, "where", chromedp.Evaluate[bool](`document.getElementById('changes').nextElementSibling.id === 'r-note-warnings'`)); !after {
		t.Error("the warnings are not under the changes and their notes")
	}
	lookAt(t, ctx, shot, "review-note-warnings")
}
