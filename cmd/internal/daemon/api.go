package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kulehq/kule/kernel"
)

// apiError is the body of every refusal: what happened, and what to do.
type apiError struct {
	Error string `json:"error"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	_ = enc.Encode(v)
}

func fail(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, kernel.ErrTaskNotFound), errors.Is(err, ErrNoQuestion), errors.Is(err, os.ErrNotExist), errors.Is(err, kernel.ErrGroupNotFound):
		code = http.StatusNotFound
	case errors.Is(err, kernel.ErrBadTaskID), errors.Is(err, kernel.ErrAmbiguousTask), errors.Is(err, ErrWaitRange),
		errors.Is(err, ErrBadQuestion), errors.Is(err, errBadRequest), errors.Is(err, kernel.ErrNotFolder),
		errors.Is(err, kernel.ErrInsideKuleHome), errors.Is(err, kernel.ErrFolderRefused), errors.Is(err, errNotImage), errors.Is(err, errPath),
		errors.Is(err, kernel.ErrBadGroup), errors.Is(err, kernel.ErrBadGroupPolicy), errors.Is(err, kernel.ErrNoOwnPolicy), errors.Is(err, kernel.ErrPolicy):
		code = http.StatusBadRequest
	case errors.Is(err, ErrAnswered), errors.Is(err, kernel.ErrChangedUnderneath), errors.Is(err, kernel.ErrUndoBlocked),
		errors.Is(err, kernel.ErrNothingToUndo), errors.Is(err, errHasChanges), errors.Is(err, errBusy), errors.Is(err, errRulesChanged),
		errors.Is(err, errTrialRunning), errors.Is(err, errTrialStale):
		code = http.StatusConflict
	}
	writeJSON(w, code, apiError{Error: err.Error()})
}

var (
	errBadRequest = errors.New("bad request")
	errHasChanges = errors.New("the task has uncommitted changes")
	errBusy       = errors.New("a command is already running in this task")
)

// maxBody bounds a request body.
const maxBody = 1 << 20

func readBody(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); errors.Is(err, io.EOF) {
		return nil // an empty body: the handler's defaults
	} else if err != nil {
		return fmt.Errorf("%w: %v", errBadRequest, err)
	}
	// One JSON value and nothing after it: a client that sent two would
	// otherwise have the first applied and the rest dropped without a word.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: the body holds more than one JSON value (send one object; nothing was done)", errBadRequest)
	}
	return nil
}

func (d *Daemon) apiHandler() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("GET /api/health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"pid": os.Getpid(), "home": d.home, "http": d.Addr(), "waiting": d.Q.Pending()})
	})
	m.HandleFunc("GET /api/app", func(w http.ResponseWriter, r *http.Request) {
		if !viaSocket(r) {
			fail(w, fmt.Errorf("%w: the app address is given over the socket only", errBadRequest))
			return
		}
		writeJSON(w, 200, map[string]any{"url": d.URL(), "addr": d.Addr()})
	})
	m.HandleFunc("GET /api/events", d.Bus.serveSSE)
	m.HandleFunc("GET /api/tasks", d.listTasks)
	m.HandleFunc("POST /api/tasks", d.newTask)
	m.HandleFunc("GET /api/tasks/{id}", d.withTask(d.taskStatus))
	m.HandleFunc("PATCH /api/tasks/{id}", d.withTask(d.patchTask))
	m.HandleFunc("DELETE /api/tasks/{id}", d.withTask(d.deleteTask))
	m.HandleFunc("POST /api/tasks/{id}/move", d.withTask(d.moveTask))
	m.HandleFunc("POST /api/tasks/{id}/exec", d.withTask(d.execTask))
	m.HandleFunc("POST /api/tasks/{id}/agent", d.withTask(d.agentTask))
	m.HandleFunc("POST /api/tasks/{id}/resume", d.withTask(d.resumeTask))
	m.HandleFunc("GET /api/interrupted", d.listInterrupted)
	m.HandleFunc("POST /api/tasks/{id}/stop", d.withTask(d.stopTask))
	m.HandleFunc("POST /api/tasks/{id}/commit", d.withTask(d.commitTask))
	m.HandleFunc("POST /api/tasks/{id}/rollback", d.withTask(d.rollbackTask))
	m.HandleFunc("POST /api/tasks/{id}/undo", d.withTask(d.undoTask))
	m.HandleFunc("GET /api/tasks/{id}/history", d.withTask(d.taskHistory))
	m.HandleFunc("GET /api/tasks/{id}/steps", d.withTask(d.taskSteps))
	m.HandleFunc("GET /api/tasks/{id}/files", d.withTask(d.listFiles))
	m.HandleFunc("GET /api/tasks/{id}/image", d.withTask(d.serveImage))
	m.HandleFunc("GET /api/tasks/{id}/preview", d.withTask(d.previewFile))
	m.HandleFunc("POST /api/tasks/{id}/about", d.withTask(d.aboutPrompt))
	m.HandleFunc("GET /api/tasks/{id}/diff", d.withTask(d.serveDiff))
	m.HandleFunc("POST /api/tasks/{id}/notes", d.withTask(d.taskNotes))
	d.terminalRoutes(m)
	d.themeRoutes(m)
	d.knobRoutes(m)
	d.homeRoutes(m)
	d.layoutRoutes(m)
	d.homeSettingsRoutes(m)
	d.ruleRoutes(m)
	d.trialRoutes(m)
	d.profileRoutes(m)
	d.needsRoutes(m)
	m.HandleFunc("POST /api/tasks/{id}/group", d.withTask(d.setGroup))
	m.HandleFunc("GET /api/tasks/{id}/network", d.withTask(d.taskNetwork))
	m.HandleFunc("GET /api/tasks/{id}/sandbox", d.withTask(d.taskSandbox))
	m.HandleFunc("GET /api/groups", d.listGroups)
	m.HandleFunc("POST /api/groups", d.newGroup)
	m.HandleFunc("PATCH /api/groups/{id}", d.patchGroup)
	m.HandleFunc("DELETE /api/groups/{id}", d.deleteGroup)
	m.HandleFunc("GET /api/agents", d.listAgents)
	m.HandleFunc("GET /api/policy", d.getPolicy)
	m.HandleFunc("PUT /api/policy", d.putPolicy)
	m.HandleFunc("GET /api/questions", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, d.Q.List()) })
	m.HandleFunc("GET /api/proposals", d.listProposals)
	m.HandleFunc("POST /api/questions", d.postQuestion)
	m.HandleFunc("POST /api/questions/{id}/answer", d.answerQuestion)
	m.HandleFunc("GET /api/settings", d.getSettings)
	m.HandleFunc("PUT /api/settings", d.putSettings)
	m.HandleFunc("GET /api/shortcuts", d.getShortcuts)
	m.HandleFunc("PUT /api/shortcuts", d.putShortcuts)
	m.HandleFunc("POST /api/events", d.postEvent)
	m.HandleFunc("GET /api/extensions", d.listExtensions)
	m.HandleFunc("POST /api/extensions/{id}/commands/{command}", d.runExtensionCommand)
	m.HandleFunc("POST /api/extensions/{id}/call", d.panelCall)
	m.HandleFunc("PUT /api/extensions/{id}/settings", d.putExtensionSettings)
	m.HandleFunc("GET /api/extensions/{id}/themes/{theme}", d.extensionTheme)
	m.HandleFunc("GET /api/transports", d.listTransports)
	m.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 404, apiError{Error: "no such endpoint: " + r.Method + " " + r.URL.Path + " (docs/api.md lists them)"})
	})
	return m
}

func (d *Daemon) withTask(fn func(http.ResponseWriter, *http.Request, *kernel.Task)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		t, err := d.k.Resolve(r.PathValue("id"))
		if err != nil {
			fail(w, err)
			return
		}
		fn(w, r, t)
	}
}

// TaskView is a task as the list shows it.
type TaskView struct {
	ID       string    `json:"id"`
	Folder   string    `json:"folder"`
	Name     string    `json:"name,omitempty"`
	Colour   string    `json:"colour,omitempty"`
	Group    string    `json:"group,omitempty"`
	Order    int       `json:"order"`
	Created  time.Time `json:"created"`
	Backend  string    `json:"backend"`
	Changes  int       `json:"changes"`
	Summary  string    `json:"summary"`
	Asks     int       `json:"asks"`    // effects the policy puts to a person
	Denied   int       `json:"denied"`  // effects the policy refuses
	Waiting  int       `json:"waiting"` // questions waiting
	Running  bool      `json:"running"`
	WaitMins int       `json:"wait_minutes"`
	// Usage is what the task's runs used (tokens, cost a currency, runs)
	// and where it stands against its budget and the daily budget, as
	// kule status adds it up; UsageError says why it could not be read.
	Usage      *kernel.BudgetSummary `json:"usage,omitempty"`
	UsageError string                `json:"usage_error,omitempty"`
	Error      string                `json:"error,omitempty"`
}

func (d *Daemon) viewOf(ctx context.Context, t *kernel.Task) TaskView { return d.viewWith(ctx, t, nil) }

// viewWith builds the view from a status already found (nil: find it).
func (d *Daemon) viewWith(ctx context.Context, t *kernel.Task, st *kernel.Status) TaskView {
	v := TaskView{ID: t.ID, Folder: t.Folder, Name: t.Name, Colour: t.Colour, Group: t.Group, Order: t.Order, Created: t.Created, Backend: t.Backend,
		Running: d.runs.running(t.ID), WaitMins: int(d.Q.WaitFor(t.ID) / time.Minute)}
	for _, q := range d.Q.List() {
		if q.Task == t.ID && q.State == Waiting {
			v.Waiting++
		}
	}
	if sum, err := d.k.TaskUsage(t, time.Now()); err != nil {
		v.UsageError = err.Error()
	} else {
		v.Usage = sum
	}
	if st == nil {
		var err error
		if st, err = d.k.Status(ctx, t); err != nil {
			// A running command changes the copy while it is read: a file
			// gone between listing and reading is no error of the task.
			if !v.Running {
				v.Error = err.Error()
			}
			return v
		}
	}
	p := st.Pending(false)
	v.Changes, v.Summary = len(p), kernel.EffectsSummary(p)
	if _, rs, err := d.judge(t, p); err != nil {
		v.Error = err.Error()
	} else {
		for _, r := range rs {
			switch r.Verdict {
			case kernel.OutcomeAsk:
				v.Asks++
			case kernel.OutcomeDeny:
				v.Denied++
			}
		}
	}
	return v
}

func (d *Daemon) listTasks(w http.ResponseWriter, r *http.Request) {
	ts, err := d.k.Tasks()
	if err != nil {
		fail(w, err)
		return
	}
	out := []TaskView{}
	for _, t := range ts {
		out = append(out, d.viewOf(r.Context(), t))
	}
	writeJSON(w, 200, out)
}

func (d *Daemon) newTask(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Folder string `json:"folder"`
		Name   string `json:"name"`
	}
	if err := readBody(r, &in); err != nil {
		fail(w, err)
		return
	}
	in.Folder = strings.TrimSpace(in.Folder)
	if in.Folder == "" || !filepath.IsAbs(expandHome(in.Folder)) {
		fail(w, fmt.Errorf("%w: give the folder as an absolute path (or ~/…)", errBadRequest))
		return
	}
	if err := d.checkFolder(expandHome(in.Folder)); err != nil {
		fail(w, err)
		return
	}
	rep, err := d.k.NewTask(context.WithoutCancel(r.Context()), expandHome(in.Folder))
	if err != nil {
		fail(w, err)
		return
	}
	t := rep.Task
	if ts, err := d.k.Tasks(); err == nil && len(ts) > 0 {
		t.Order = ts[len(ts)-1].Order
		if ts[len(ts)-1].ID != t.ID {
			t.Order++
		}
	}
	if in.Name != "" {
		t.Name = cleanName(in.Name)
	}
	if err := d.k.SaveTask(t); err != nil {
		fail(w, err)
		return
	}
	d.Bus.Publish("task", t.ID, map[string]any{"action": "new"})
	writeJSON(w, 201, map[string]any{"task": d.viewOf(r.Context(), t), "files": rep.Files, "skipped": len(rep.Problems)})
}

// refuseFolders keeps credential folders and Kule's home from being a
// task's folder. Tests turn it off to show what it guards.
var refuseFolders = true

// checkFolder refuses a folder no task may copy (kernel.CheckTaskFolder):
// a task on ~/.ssh would hand the keys to every command run in it.
func (d *Daemon) checkFolder(folder string) error {
	if !refuseFolders {
		return nil
	}
	home := d.cfg.UserHome
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return kernel.CheckTaskFolder(folder, home, d.home)
}

func expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, strings.TrimPrefix(p, "~"))
		}
	}
	return p
}

// ChangeView is one effect as Review shows it.
type ChangeView struct {
	Kind    kernel.EffectKind `json:"kind"`
	Path    string            `json:"path"`
	From    string            `json:"from,omitempty"`
	Type    string            `json:"type"`
	Size    int64             `json:"size"`
	Dir     bool              `json:"dir,omitempty"`
	Files   int               `json:"files,omitempty"`
	Line    string            `json:"line"` // as `kule status` prints it
	Ignored bool              `json:"ignored,omitempty"`
	Verdict string            `json:"verdict"` // pass, ask or deny: the kernel's ruling
	Rule    string            `json:"rule,omitempty"`
	Reason  string            `json:"reason,omitempty"`
	Names   []string          `json:"names,omitempty"`
	// Notes are extensions' review notes under this file (or an entity
	// named in it): extensions.go.
	Notes []noteView `json:"notes,omitempty"`
	Image bool       `json:"image,omitempty"` // before/after pictures may be asked for
	// Remember is whether Approve and remember can keep its approval.
	Remember bool   `json:"can_remember,omitempty"`
	Target   string `json:"target,omitempty"` // where a link points (never followed)
}

// GitView is one line of what the task did to a repository, as Review
// shows it: each part a commit would apply (a ref, the index, a hook, a
// config file) with the kernel's verdict on it; lines that only inform (new
// objects, a repository refused by name) carry none.
type GitView struct {
	Line    string `json:"line"`
	Verdict string `json:"verdict,omitempty"` // pass, ask or deny
	Rule    string `json:"rule,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// gitViews are st's repository lines with the verdicts j gave their parts.
func gitViews(st *kernel.Status, j *kernel.Judgement) []GitView {
	byLine := map[string]kernel.Verdict{}
	for _, it := range j.Git {
		byLine[it.Line] = it.Verdict
	}
	out := []GitView{}
	for _, e := range st.Git {
		for _, l := range e.Lines() {
			gv := GitView{Line: l}
			if v, ok := byLine[l]; ok {
				gv.Verdict, gv.Rule, gv.Reason = word(v.Outcome), strings.Join(v.Rules, ", "), v.Reason
			}
			out = append(out, gv)
		}
	}
	return out
}

func (d *Daemon) changes(ctx context.Context, t *kernel.Task) (*kernel.Status, []ChangeView, []GitView, error) {
	st, err := d.k.Status(ctx, t)
	if err != nil {
		return nil, nil, nil, err
	}
	// The files and the repositories in one ruling, as a commit judges them.
	j, err := d.k.JudgeStatus(t, st, true, false)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%w — nothing can be committed until the policy reads; fix the file it names (kule policy shows what is in force)", err)
	}
	rulings := rulingsOf(j)
	names, err := d.cfg.Reviewer.Entities(ctx, t, st)
	if err != nil {
		d.log.Warn("review names failed", "task", t.ID, "err", err)
		names = nil
	}
	out := []ChangeView{}
	for _, e := range st.Effects {
		typ := e.NewType.String()
		if e.Kind == kernel.EffectDelete {
			typ = e.OldType.String()
		}
		cv := ChangeView{Kind: e.Kind, Path: e.Path, From: e.From, Type: typ, Size: e.Size, Dir: e.Dir, Files: e.Files, Line: e.String(), Ignored: e.Ignored, Verdict: word(kernel.OutcomeDeny), Target: e.Target}
		if r, ok := rulings[e.Path]; ok {
			cv.Verdict, cv.Rule, cv.Reason, cv.Remember = word(r.Verdict), r.Rule, r.Reason, r.Remember
		}
		cv.Names = names[e.Path]
		cv.Image = !e.Dir && typ == "file" && imageExt(e.Path)
		out = append(out, cv)
	}
	return st, out, gitViews(st, j), nil
}

func (d *Daemon) taskStatus(w http.ResponseWriter, r *http.Request, t *kernel.Task) {
	if d.runs.running(t.ID) {
		writeJSON(w, 200, map[string]any{"task": d.viewOf(r.Context(), t), "running": true, "changes": []ChangeView{}})
		return
	}
	st, cs, gs, err := d.changes(r.Context(), t)
	if err != nil {
		fail(w, err)
		return
	}
	probs := []string{}
	for _, p := range st.Problems {
		probs = append(probs, p.String())
	}
	noteWarnings := d.attachNotes(r.Context(), st, cs)
	c := kernel.CountEffects(st.Pending(false))
	writeJSON(w, 200, map[string]any{
		"note_warnings": noteWarnings,
		"task":          d.viewWith(r.Context(), t, st),
		"summary":       map[string]int{"added": c.Added, "changed": c.Changed, "deleted": c.Deleted, "moved": c.Moved},
		"changes":       cs,
		"git":           gs,
		"ignored":       st.IgnoredCount(),
		"problems":      probs,
		"can_remember":  true,
		"meets":         d.meetsOf(t, st),
	})
}

// cleanName keeps a name to one line of at most 80 characters.
func cleanName(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 80 {
		s = string(r[:80])
	}
	return s
}

// Colours a task may take.
var Colours = []string{"", "slate", "red", "orange", "amber", "green", "teal", "blue", "indigo", "violet", "pink"}

func (d *Daemon) patchTask(w http.ResponseWriter, r *http.Request, t *kernel.Task) {
	var in struct {
		Name   *string `json:"name"`
		Colour *string `json:"colour"`
		Wait   *int    `json:"wait_minutes"`
	}
	if err := readBody(r, &in); err != nil {
		fail(w, err)
		return
	}
	if in.Colour != nil && !slices.Contains(Colours, *in.Colour) {
		fail(w, fmt.Errorf("%w: colour %q is not one of %s", errBadRequest, *in.Colour, strings.Join(Colours[1:], ", ")))
		return
	}
	if in.Wait != nil {
		if err := d.Q.SetWait(t.ID, time.Duration(*in.Wait)*time.Minute); err != nil {
			fail(w, err)
			return
		}
	}
	if in.Name != nil || in.Colour != nil {
		var err error
		t, err = d.k.EditTask(t.ID, func(t *kernel.Task) {
			if in.Name != nil {
				t.Name = cleanName(*in.Name)
			}
			if in.Colour != nil {
				t.Colour = *in.Colour
			}
		})
		if err != nil {
			fail(w, err)
			return
		}
	}
	d.Bus.Publish("task", t.ID, map[string]any{"action": "edit"})
	writeJSON(w, 200, d.viewOf(r.Context(), t))
}

// Reorder moves a task by delta places in the person's order and renumbers
// every task's Order (task.json) so `kule list` keeps it.
func Reorder(k *kernel.Kernel, id string, delta int) error {
	ts, err := k.Tasks()
	if err != nil {
		return err
	}
	i := slices.IndexFunc(ts, func(t *kernel.Task) bool { return t.ID == id })
	if i < 0 {
		return fmt.Errorf("%w: %s", kernel.ErrTaskNotFound, id)
	}
	j := min(max(i+delta, 0), len(ts)-1)
	t := ts[i]
	ts = slices.Delete(ts, i, i+1)
	ts = slices.Insert(ts, j, t)
	for n, t := range ts {
		if t.Order != n+1 {
			if _, err := k.EditTask(t.ID, func(t *kernel.Task) { t.Order = n + 1 }); err != nil {
				return err
			}
		}
	}
	return nil
}

func (d *Daemon) moveTask(w http.ResponseWriter, r *http.Request, t *kernel.Task) {
	var in struct {
		By int `json:"by"`
	}
	if err := readBody(r, &in); err != nil {
		fail(w, err)
		return
	}
	if err := Reorder(d.k, t.ID, in.By); err != nil {
		fail(w, err)
		return
	}
	d.Bus.Publish("task", t.ID, map[string]any{"action": "order"})
	d.listTasks(w, r)
}

func (d *Daemon) deleteTask(w http.ResponseWriter, r *http.Request, t *kernel.Task) {
	if d.runs.running(t.ID) {
		fail(w, fmt.Errorf("delete %s: %w; wait for it or stop it first", t.ID, errBusy))
		return
	}
	if r.URL.Query().Get("yes") != "1" {
		if st, err := d.k.Status(r.Context(), t); err == nil && len(st.Effects) > 0 {
			fail(w, fmt.Errorf("delete %s: %w (%d); commit them, or confirm to throw them away (the folder is untouched either way)", t.ID, errHasChanges, len(st.Effects)))
			return
		}
	}
	if err := d.k.Delete(context.WithoutCancel(r.Context()), t); err != nil {
		fail(w, err)
		return
	}
	d.Q.DropTask(t.ID)
	d.Bus.Publish("task", t.ID, map[string]any{"action": "delete"})
	writeJSON(w, 200, map[string]any{"deleted": t.ID, "folder": t.Folder})
}

// CommitRequest chooses what a commit from the app takes in.
type CommitRequest struct {
	ApproveAll bool     `json:"approve_all"` // "Approve and commit": every effect the policy asks about
	Approve    []string `json:"approve"`     // paths a person approved one by one
	Exclude    []string `json:"exclude"`     // paths a person held back
	// Remember are approved paths whose approval is kept as a rule for the
	// folder (Approve and remember), when the policy can keep rules.
	Remember []string `json:"remember"`
	// IncludeIgnored also commits the changes the folder's .gitignore
	// excludes (Also commit these), judged like every other change.
	IncludeIgnored bool `json:"include_ignored"`
}

// afterJudging runs between the app's judging and the kernel's commit; tests
// change the copy there.
var afterJudging = func(*kernel.Task) {}

func (d *Daemon) commitTask(w http.ResponseWriter, r *http.Request, t *kernel.Task) {
	var in CommitRequest
	if err := readBody(r, &in); err != nil {
		fail(w, err)
		return
	}
	if d.runs.running(t.ID) {
		fail(w, fmt.Errorf("commit %s: %w; commit when it ends", t.ID, errBusy))
		return
	}
	st, err := d.k.Status(r.Context(), t)
	if err != nil {
		fail(w, err)
		return
	}
	pending := st.Pending(in.IncludeIgnored)
	_, rulings, err := d.judge(t, pending)
	if err != nil && commitsJudged {
		fail(w, fmt.Errorf("commit %s: %w — nothing was applied; fix the file it names (kule policy shows what is in force) and commit again", t.ID, err))
		return
	}
	// What the person approved: of what asks in the ruling they were shown,
	// the paths they picked (or all, for Approve and commit).
	judged := make(map[string]bool, len(pending))
	var approved []string
	for _, e := range pending {
		judged[e.Path] = true
		if rulings[e.Path].Verdict == kernel.OutcomeAsk && !slices.Contains(in.Exclude, e.Path) && !slices.Contains(approved, e.Path) &&
			(in.ApproveAll || slices.Contains(in.Approve, e.Path) || slices.Contains(in.Remember, e.Path)) {
			approved = append(approved, e.Path)
		}
	}
	// The kernel judges again under the commit's locks, from the status it
	// applies: a deny never goes in, nor anything the policy did not see,
	// and of what asks only the approved paths (Approval). Select keeps out
	// what the person held back and what appeared after they were shown.
	opts := kernel.CommitOptions{Policy: commitsJudged, Approve: len(approved) > 0, IncludeIgnored: in.IncludeIgnored}
	if approvalLimits {
		opts.Approval = &kernel.Approval{By: "app", Paths: approved}
	}
	opts.Select = func(e kernel.Effect) bool {
		if slices.Contains(in.Exclude, e.Path) || !judged[e.Path] {
			return false
		}
		switch rulings[e.Path].Verdict {
		case kernel.OutcomeDeny:
			return false
		case kernel.OutcomeAsk:
			return slices.Contains(approved, e.Path)
		}
		return true
	}
	afterJudging(t)
	rep, err := d.k.Commit(context.WithoutCancel(r.Context()), t, opts)
	if err != nil {
		fail(w, err)
		return
	}
	var remembered []string
	if len(in.Remember) > 0 && len(rep.Applied) > 0 {
		remembered, err = d.rememberPaths(t, rep.Judgement, rep.Applied, in.Remember)
		if err != nil {
			d.log.Warn("approval not remembered", "task", t.ID, "err", err)
		}
	}
	lines := func(es []kernel.Effect) []string {
		out := []string{}
		for _, e := range es {
			out = append(out, e.String())
		}
		return out
	}
	res := map[string]any{"task": t.ID, "checkpoint": rep.Checkpoint, "applied": lines(rep.Applied), "left": lines(rep.Left), "summary": kernel.EffectsSummary(rep.Applied), "remembered": remembered}
	d.Bus.Publish("commit", t.ID, res)
	writeJSON(w, 200, res)
}

func (d *Daemon) rollbackTask(w http.ResponseWriter, r *http.Request, t *kernel.Task) {
	if d.runs.running(t.ID) {
		fail(w, fmt.Errorf("rollback %s: %w", t.ID, errBusy))
		return
	}
	rep, err := d.k.Rollback(context.WithoutCancel(r.Context()), t)
	if err != nil {
		fail(w, err)
		return
	}
	d.Bus.Publish("rollback", t.ID, map[string]any{"changes": rep.Changes, "git": rep.Git})
	writeJSON(w, 200, map[string]any{"task": t.ID, "changes": rep.Changes, "git": rep.Git})
}

func (d *Daemon) undoTask(w http.ResponseWriter, r *http.Request, t *kernel.Task) {
	rep, err := d.k.Undo(context.WithoutCancel(r.Context()), t)
	if err != nil {
		fail(w, err)
		return
	}
	res := map[string]any{"task": t.ID, "checkpoint": rep.Checkpoint, "paths": rep.Paths}
	d.Bus.Publish("undo", t.ID, res)
	writeJSON(w, 200, res)
}

func (d *Daemon) taskHistory(w http.ResponseWriter, r *http.Request, t *kernel.Task) {
	log, err := d.k.HistoryLog(t)
	if err != nil {
		fail(w, err)
		return
	}
	es, err := log.Entries()
	if err != nil {
		fail(w, err)
		return
	}
	if es == nil {
		es = []kernel.HistoryEntry{}
	}
	verified := ""
	if r.URL.Query().Get("verify") == "1" {
		verified = "ok"
		if err := d.k.VerifyHistory(t); err != nil {
			verified = err.Error()
		}
	}
	writeJSON(w, 200, map[string]any{"entries": es, "verify": verified})
}

func (d *Daemon) taskSteps(w http.ResponseWriter, r *http.Request, t *kernel.Task) {
	steps, err := readSteps(t)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, 200, steps)
}

func (d *Daemon) postQuestion(w http.ResponseWriter, r *http.Request) {
	if !viaSocket(r) {
		fail(w, fmt.Errorf("%w: questions are posted over the socket only", errBadRequest))
		return
	}
	var in Question
	if err := readBody(r, &in); err != nil {
		fail(w, err)
		return
	}
	if _, err := d.k.Resolve(in.Task); err != nil {
		fail(w, err)
		return
	}
	q, err := d.Q.Post(in)
	if err != nil {
		fail(w, err)
		return
	}
	if r.URL.Query().Get("wait") == "1" {
		q, err = d.Q.Wait(r.Context(), q.ID)
		if err != nil {
			d.Q.Withdraw(q.ID, "asker gone") // the asker stopped waiting: nobody would hear the answer
			fail(w, err)
			return
		}
	}
	writeJSON(w, 200, q)
}

func (d *Daemon) answerQuestion(w http.ResponseWriter, r *http.Request) {
	var in Decision
	if err := readBody(r, &in); err != nil {
		fail(w, err)
		return
	}
	q, err := d.Q.Answer(r.PathValue("id"), in)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, 200, q)
}

// postEvent lets a local process of the same user (over the socket only) put
// an event on the stream: the proxy's connections, a CLI commit.
func (d *Daemon) postEvent(w http.ResponseWriter, r *http.Request) {
	if !viaSocket(r) {
		fail(w, fmt.Errorf("%w: events are posted over the socket only", errBadRequest))
		return
	}
	var in struct {
		Type string          `json:"type"`
		Task string          `json:"task"`
		Data json.RawMessage `json:"data"`
	}
	if err := readBody(r, &in); err != nil {
		fail(w, err)
		return
	}
	switch in.Type {
	case "connection", "step", "task", "commit", "undo", "rollback", "run":
	default:
		fail(w, fmt.Errorf("%w: event type %q", errBadRequest, in.Type))
		return
	}
	d.Bus.Publish(in.Type, in.Task, in.Data)
	writeJSON(w, 200, map[string]any{"ok": true})
}

func (d *Daemon) getSettings(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, 200, map[string]any{"wait_minutes": int(d.Q.WaitFor("") / time.Minute), "min_wait_minutes": int(MinWait / time.Minute), "max_wait_minutes": int(MaxWait / time.Minute)})
}

func (d *Daemon) putSettings(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Wait int `json:"wait_minutes"`
	}
	if err := readBody(r, &in); err != nil {
		fail(w, err)
		return
	}
	if err := d.Q.SetWait("", time.Duration(in.Wait)*time.Minute); err != nil {
		fail(w, err)
		return
	}
	d.getSettings(w, r)
}

// listProposals is what Needs you lists beside the questions: the
// graduation proposals that stand (each with its evidence; a person
// accepts one with kule rules accept ID), and the demotions a review just
// made.
func (d *Daemon) listProposals(w http.ResponseWriter, r *http.Request) {
	rep, err := d.k.ReviewGraduation(r.Context(), "")
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"proposals": append([]kernel.GraduationProposal{}, rep.Proposals...),
		"demotions": append([]kernel.GraduationDemotion{}, rep.Demotions...),
	})
}
