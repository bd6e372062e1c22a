package kernel

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kulehq/kule/kernel/internal/acp"
	"github.com/kulehq/kule/kernel/internal/budget"
	"github.com/kulehq/kule/kernel/internal/limits"
	"github.com/kulehq/kule/kernel/internal/memory"
	"github.com/kulehq/kule/kernel/internal/policy"
	"github.com/kulehq/kule/kernel/internal/runner"
	"github.com/kulehq/kule/kernel/internal/task"
)

// The memory of past runs ($KULE_HOME/memory.db, kernel/internal/memory):
// the kernel records every run of `kule exec` and `kule run`, and what
// became of its changes, from the places where a run ends and a commit,
// rollback or undo is done. Memory is advisory: none of these calls can
// fail the work they follow. Their errors go to the kernel's log (the
// person reads them as a warning) and the work's own result is unchanged.

// memHandle is the home's memory store, opened on first use and shared by
// every value With derives. A failed open is retried at the next call (the
// person may have moved a damaged file aside).
type memHandle struct {
	mu sync.Mutex
	st *memory.Store
}

// Memory is the home's memory store, opened (and migrated) on first use.
func (k *Kernel) Memory() (*memory.Store, error) {
	h := k.mem
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.st == nil {
		st, err := memory.Open(memory.Path(k.store.Root))
		if err != nil {
			return nil, err
		}
		h.st = st
	}
	// The commands that ended since (kule exec leaves its runs in the
	// pending log) are taken in before anything reads or adds to the
	// memory, so that it sees the runs in the order they ended.
	_, err := h.st.TakePending(context.Background())
	k.memWarn("the commands' records", err)
	return h.st, nil
}

// CloseMemory closes the memory store if it is open (the daemon's end,
// tests that remove the home).
func (k *Kernel) CloseMemory() error {
	h := k.mem
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.st == nil {
		return nil
	}
	err := h.st.Close()
	h.st = nil
	return err
}

// memWarn logs what memory could not keep; the work it followed is unchanged.
func (k *Kernel) memWarn(what string, err error) {
	if err == nil {
		return
	}
	if k.cfg.Logger != nil {
		k.cfg.Logger.Warn("memory: "+what+" was not remembered; the folder and the task are unaffected", "error", err.Error())
	}
}

// memStore is the store for an advisory call, or nil (logged) when it
// cannot be opened.
func (k *Kernel) memStore(what string) *memory.Store {
	st, err := k.Memory()
	if err != nil {
		k.memWarn(what, err)
		return nil
	}
	return st
}

// MemoryRun is what a client says of an agent run when it starts
// (kernel/agentrun) so the memory records it.
type MemoryRun struct {
	Agent, AgentVersion, Session string
	Conversation                 string // the name the person gave the conversation ("" none)
	Prompt                       string
	Source                       string   // "" or memory.SourceOperator; memory.SourceChat for a chat user who is not the operator
	Inputs                       []string // untrusted inputs given to the run, in words
	// Resumes is the interrupted run (its record's id) this run resumes
	// (kule run --resume, the app's Resume); 0 none.
	Resumes int64
}

// MemoryRunEnd is how an agent run ended.
type MemoryRunEnd struct {
	StopReason   string // the turn's (end_turn, cancelled, ...); "" when it failed
	Err          error  // why it failed
	LimitErr     error  // the limit or budget that stopped it
	Agent        string // the agent's name and version as it said them
	Session      string
	Cost         []budget.Money
	Tokens       int64
	Status       *Status
	Questions    []memory.Question
	AgentVersion string
}

// MemoryRunStarted records the start of an agent run on t; 0 when memory
// could not keep it (logged).
func (k *Kernel) MemoryRunStarted(t *task.Task, r MemoryRun) int64 {
	st := k.memStore("the run's start")
	if st == nil {
		return 0
	}
	id, err := st.StartRun(context.Background(), memory.Start{Task: t.ID, Folder: t.Folder, Kind: memory.KindAgent, Agent: r.Agent,
		AgentVersion: r.AgentVersion, Session: r.Session, Conversation: r.Conversation, Prompt: r.Prompt, Source: r.Source, Inputs: r.Inputs})
	k.memWarn("the run's start", err)
	if err == nil && r.Resumes != 0 {
		k.memWarn("the resumed run", st.Resumed(context.Background(), r.Resumes, id))
	}
	return id
}

// MemoryProgress records where agent run id (from MemoryRunStarted) is:
// its last steps and the questions that wait, so that if Kule stops before
// the run ends the run that resumes it is told.
func (k *Kernel) MemoryProgress(id int64, p memory.Progress) {
	if id == 0 {
		return
	}
	if st := k.memStore("the run's progress"); st != nil {
		k.memWarn("the run's progress", st.SetProgress(context.Background(), id, p))
	}
}

// ResumableRuns are the interrupted agent runs that wait to be resumed,
// newest first (of task only, when set): InterruptedRuns marks them first,
// then the ones neither resumed nor followed by a later agent run on their
// task are returned.
func (k *Kernel) ResumableRuns(ctx context.Context, task string) ([]*memory.Run, error) {
	if _, err := k.InterruptedRuns(ctx, task); err != nil {
		return nil, err
	}
	st, err := k.Memory()
	if err != nil {
		return nil, err
	}
	return st.Resumable(ctx, task)
}

// MemoryRunEnded records how agent run id (from MemoryRunStarted) ended.
func (k *Kernel) MemoryRunEnded(t *task.Task, id int64, e MemoryRunEnd) {
	defer k.graduationAfter(t) // a failure demotes its graduated category at once
	if id == 0 {
		return
	}
	st := k.memStore("the run's end")
	if st == nil {
		return
	}
	end := memory.End{How: memory.EndDone, Agent: e.Agent, AgentVersion: e.AgentVersion, Session: e.Session, Tokens: e.Tokens, Questions: e.Questions}
	switch {
	case e.LimitErr != nil:
		end.How, end.Limit = memory.EndLimit, limitName(e.LimitErr)
	case e.Err != nil:
		end.How = memory.EndFailed
	case e.StopReason == "cancelled":
		end.How = memory.EndCancelled
	case e.StopReason != "end_turn" && e.StopReason != "":
		end.How = memory.EndFailed // max_tokens, refusal, ...: the turn did not finish its work
	}
	if e.Err != nil {
		end.ErrorTail = e.Err.Error()
	} else if end.How == memory.EndFailed {
		end.ErrorTail = "the turn ended: " + e.StopReason
	}
	if len(e.Cost) > 0 {
		end.Cost, end.Currency = e.Cost[0].Amount, e.Cost[0].Currency
	}
	k.memEffects(t, e.Status, &end)
	_, err := st.EndRun(context.Background(), id, end)
	k.memWarn("the run's end", err)
}

// execRecord is what is known of a `kule exec` command while it runs: its
// start, and what its connections did for their hosts' categories.
type execRecord struct {
	start    memory.Start
	mu       sync.Mutex
	subjects []memory.SubjectUse
}

func (r *execRecord) addSubjects(us []memory.SubjectUse) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.subjects = append(r.subjects, us...)
}

// memExecStart records the start of a `kule exec` command in the memory's
// pending log (memory/pending.go): a command killed before its end is
// found interrupted, as a run recorded in the database would be.
func (k *Kernel) memExecStart(t *task.Task, args []string) *execRecord {
	rec := &execRecord{start: memory.Start{Task: t.ID, Folder: t.Folder, Kind: memory.KindExec, Prompt: strings.Join(args, " "), Started: k.memNow()}}
	k.memWarn("the command's start", memory.AppendPending(k.store.Root, memory.PendingRun{Start: rec.start}))
	return rec
}

// memNow is the memory's clock: the open store's (tests move it), else
// the time.
func (k *Kernel) memNow() time.Time {
	h := k.mem
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.st != nil {
		return h.st.Now()
	}
	return time.Now()
}

// memExecEnd records how a `kule exec` command ended: its exit code, the
// last lines of its stderr (tail, when Kule saw them), the limit that
// stopped it, its effects. The record goes to the memory's pending log,
// not the database (memory/pending.go): a command's own cost stays off
// SQLite, and the next use of the memory takes the record in.
func (k *Kernel) memExecEnd(t *task.Task, rec *execRecord, code int, st *Status, runErr error, tail *tailWriter) {
	defer k.graduationAfter(t) // a failure demotes its graduated category at once
	end := memory.End{How: memory.EndDone}
	if code >= 0 {
		end.Exit = &code
	}
	switch {
	case limitName(runErr) != "":
		end.How, end.Limit, end.ErrorTail = memory.EndLimit, limitName(runErr), runErr.Error()
	case errors.Is(runErr, context.Canceled):
		end.How = memory.EndCancelled
	case runErr != nil:
		end.How, end.ErrorTail = memory.EndFailed, runErr.Error()
	case code != 0:
		end.How = memory.EndFailed
		if tail != nil {
			end.ErrorTail = tail.String()
		}
		if end.ErrorTail == "" {
			end.ErrorTail = fmt.Sprintf("exit status %d", code)
		}
	}
	k.memEffects(t, st, &end)
	end.ErrorTail = memory.Tail(end.ErrorTail, memory.MaxTail)
	end.Ended = k.memNow()
	if !end.Ended.After(rec.start.Started) {
		end.Ended = rec.start.Started
	}
	rec.mu.Lock()
	subjects := rec.subjects
	rec.mu.Unlock()
	k.memWarn("the command's end", memory.AppendPending(k.store.Root, memory.PendingRun{Start: rec.start, End: &end, Subjects: subjects}))
}

// memJudgeMax is the most effects a run's end judges for its record's
// rules: above it the rules are left to the commit, which judges anyway,
// so that a run that changed 100,000 files does not pay for it twice.
const memJudgeMax = 2000

// memEffects fills end's effects by kind and by the policy rule that asks
// or refuses each (judged as a commit would judge them), and its paths.
func (k *Kernel) memEffects(t *task.Task, st *Status, end *memory.End) {
	if st == nil || len(st.Effects) == 0 {
		return
	}
	end.Effects = map[string]int{}
	for _, e := range st.Effects {
		end.Effects[string(e.Kind)]++
		if len(end.Paths) < memory.MaxPaths {
			end.Paths = append(end.Paths, e.Path)
		}
	}
	if len(st.Effects) > memJudgeMax {
		return // judging that many is the commit's work; the record keeps the effects
	}
	j, err := k.Judge(t, st.Effects, false)
	if err != nil {
		return // the record keeps the effects; the rules are the commit's to say
	}
	end.Rules = rulesOf(j, false)
}

// rulesOf counts what each rule did in a judgement: the changes it asked
// about (approved, when approved), and those it refused.
func rulesOf(j *Judgement, approved bool) map[string]memory.RuleUse {
	if j == nil {
		return nil
	}
	out := map[string]memory.RuleUse{}
	for _, v := range j.Ruling.Verdicts {
		for _, id := range v.Rules {
			u := out[id]
			switch v.Outcome {
			case policy.Ask:
				u.Asked++
				if approved {
					u.Approved++
				}
			case policy.Deny:
				u.Denied++
			case policy.Pass:
				if v.Reason != policy.RememberedReason {
					continue
				}
				u.Remembered++ // a remembered or graduated rule let it through
			default:
				continue
			}
			out[id] = u
		}
	}
	return out
}

// subjectsSeen keeps, for one proxy, the uses already put in memory, so
// that a run connecting to a host a thousand times writes it once.
type subjectsSeen struct {
	mu     sync.Mutex
	seen   map[memory.SubjectUse]bool
	record *execRecord // the kule exec run whose record keeps them, nil: the task's running run in the database
}

// subjectUses are what the rules of verdict v did to subject: each rule
// that asked (approved, when a person allowed it), or that a remembered
// or graduated rule lifted. Every rule of a connection or a home file is
// kept per host or file: that is how its approvals are remembered too.
func subjectUses(kind, subject string, v policy.Verdict, approved bool) []memory.SubjectUse {
	var out []memory.SubjectUse
	for _, rule := range v.Rules {
		u := memory.SubjectUse{Rule: rule, Kind: kind, Subject: subject}
		switch {
		case v.Outcome == policy.Ask:
			u.Asked = 1
			if approved {
				u.Approved = 1
			}
		case v.Outcome == policy.Pass && v.Reason == policy.RememberedReason:
			u.Remembered = 1
		default:
			continue
		}
		out = append(out, u)
	}
	return out
}

// memConnection records what the policy's rules did to a connection of
// t's running run to host:port (approved: a person allowed what asked),
// once per rule, host and count for the proxy that seen belongs to.
func (k *Kernel) memConnection(t *task.Task, seen *subjectsSeen, host string, port int, v policy.Verdict, approved bool) {
	h, p, err := policy.SplitHostPort(net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return // the proxy refuses what is not a host:port
	}
	uses := subjectUses(memory.SubjectHost, net.JoinHostPort(h, strconv.Itoa(p)), v, approved)
	if len(uses) == 0 {
		return
	}
	seen.mu.Lock()
	if seen.seen == nil {
		seen.seen = map[memory.SubjectUse]bool{}
	}
	fresh := uses[:0]
	for _, u := range uses {
		if !seen.seen[u] {
			seen.seen[u] = true
			fresh = append(fresh, u)
		}
	}
	seen.mu.Unlock()
	if len(fresh) == 0 {
		return
	}
	if seen.record != nil {
		seen.record.addSubjects(fresh)
		return
	}
	st := k.memStore("the connection")
	if st == nil {
		return
	}
	for _, u := range fresh {
		_, err := st.AddTaskSubject(context.Background(), t.ID, true, u)
		k.memWarn("the connection", err)
	}
}

// memHomeApplied records that the person applied the task's ~/rel, judged
// v, on the task's newest run that ended: their apply is the approval of
// what asked.
func (k *Kernel) memHomeApplied(t *task.Task, rel string, v policy.Verdict) {
	uses := subjectUses(memory.SubjectHome, rel, v, true)
	if len(uses) == 0 {
		return
	}
	st := k.memStore("the home apply")
	if st == nil {
		return
	}
	for _, u := range uses {
		_, err := st.AddTaskSubject(context.Background(), t.ID, false, u)
		k.memWarn("the home apply", err)
	}
}

// memHomeUndone records that the person took the apply of ~/rel back: a
// failure of that file's category.
func (k *Kernel) memHomeUndone(t *task.Task, rel string) {
	defer k.graduationAfter(t) // a failure demotes its graduated category at once
	if st := k.memStore("the home undo"); st != nil {
		_, err := st.UndoneSubject(context.Background(), t.ID, memory.SubjectHome, rel)
		k.memWarn("the home undo", err)
	}
}

// memCommit records a commit's outcome: the task's runs were committed at
// its checkpoint, with who approved what asked; a refused commit (an error,
// or changes the policy refused) is a failure of the task's newest run.
func (k *Kernel) memCommit(t *task.Task, rep *CommitReport, opt CommitOptions, cerr error) {
	defer k.graduationAfter(t) // a failure demotes its graduated category at once
	if cerr != nil && (rep == nil || rep.Checkpoint == 0) {
		k.memRefused(t, "", cerr.Error(), cerr)
		return
	}
	if rep == nil {
		return
	}
	if rep.Judgement != nil {
		if denied := rep.Judgement.Ruling.Of(policy.Deny); len(denied) > 0 {
			rule := ""
			if len(denied[0].Rules) > 0 {
				rule = denied[0].Rules[0]
			}
			k.memRefused(t, rule, fmt.Sprintf("the policy refused %d changes: %s", len(denied), denied[0].String()), nil)
		}
	}
	if rep.Checkpoint == 0 {
		return
	}
	st := k.memStore("the commit")
	if st == nil {
		return
	}
	who := ""
	if opt.Approval != nil {
		who = opt.Approval.By
	} else if opt.Approve {
		who = "cli"
	}
	applied, of := commitPaths(rep, opt)
	k.memWarn("the commit", st.Committed(context.Background(), t.ID, memory.Commit{Checkpoint: rep.Checkpoint, By: who,
		Rules: rulesOf(rep.Judgement, opt.Approve), Applied: applied, Of: of}))
}

// commitPaths is how many paths a commit applied, of the changed paths it
// was asked to commit: those it applied and those it held back (the policy
// refused them, they wait for an approval, or they were not chosen). The
// paths the folder's .gitignore hides are not counted unless the commit
// included them: leaving them is what a commit does, not a holding back.
func commitPaths(rep *CommitReport, opt CommitOptions) (applied, of int) {
	applied = len(rep.Applied)
	of = applied
	for _, e := range rep.Left {
		if !e.Ignored || opt.IncludeIgnored {
			of++
		}
	}
	return applied, of
}

// memRefused records a commit that was refused (by rule, when the policy
// refused it; why, in words), as a failure of the task's newest run. A
// commit the person cancelled (cerr) is not a failure.
func (k *Kernel) memRefused(t *task.Task, rule, why string, cerr error) {
	if errors.Is(cerr, context.Canceled) || errors.Is(cerr, ErrNothingToUndo) {
		return
	}
	st := k.memStore("the refused commit")
	if st == nil {
		return
	}
	_, err := st.Refused(context.Background(), t.ID, rule, why)
	k.memWarn("the refused commit", err)
}

// memRolledBack records that the task's pending runs were rolled back.
func (k *Kernel) memRolledBack(t *task.Task) {
	defer k.graduationAfter(t) // a failure demotes its graduated category at once
	if st := k.memStore("the rollback"); st != nil {
		k.memWarn("the rollback", st.RolledBack(context.Background(), t.ID))
	}
}

// memUndone records that the commit at rep's checkpoint was undone.
func (k *Kernel) memUndone(t *task.Task, rep *UndoReport) {
	defer k.graduationAfter(t) // a failure demotes its graduated category at once
	if rep == nil {
		return
	}
	if st := k.memStore("the undo"); st != nil {
		_, err := st.Undone(context.Background(), t.ID, rep.Checkpoint)
		k.memWarn("the undo", err)
	}
}

// Recall is what memory offers before a run of prompt on t: a proposed
// budget and notes for the agent. An error means memory could not be read;
// the run goes on without it.
func (k *Kernel) Recall(ctx context.Context, t *task.Task, prompt string) (*memory.Recall, error) {
	st, err := k.Memory()
	if err != nil {
		return nil, err
	}
	return st.Recall(ctx, t.Folder, prompt)
}

// InterruptedRuns marks the runs the memory still holds as running whose
// task nobody holds as interrupted, and returns them: the process that ran
// them ended before they did (a crash, a reboot, a kill). A run still
// going holds its task's lock, so it is left alone.
//
// When only is set, only that task's runs are looked at.
func (k *Kernel) InterruptedRuns(ctx context.Context, only string) ([]*memory.Run, error) {
	st, err := k.Memory()
	if err != nil {
		return nil, err
	}
	return st.Interrupted(ctx, func(r *memory.Run) bool {
		if only != "" && r.Task != only {
			return true // not looked at: left for a look at its own task
		}
		t, err := k.store.Load(r.Task)
		if err != nil {
			return false // the task is gone: so is its run
		}
		l, err := task.TryLockFile(t.Paths.Lock)
		if err != nil {
			return true // cannot tell: leave it for the next look
		}
		if l == nil {
			return true // held: the run (or a commit) goes on
		}
		_ = l.Unlock()
		return false
	})
}

// ConversationSession is the agent's session id of the task's newest run
// in the conversation named name (kule run --session NAME); false when the
// conversation has no run of agent yet.
func (k *Kernel) ConversationSession(ctx context.Context, t *task.Task, agent, name string) (string, bool, error) {
	st, err := k.Memory()
	if err != nil {
		return "", false, err
	}
	return st.ConversationSession(ctx, t.ID, agent, name)
}

// UseSession makes session the conversation the task's next run of agent
// continues (the agent's session/load or session/resume, where it has
// them; else the run starts a new one and says so).
func (k *Kernel) UseSession(t *task.Task, agent, session string) error {
	return acp.SaveSession(t.Paths.Dir, acp.SessionRecord{Agent: agent, Session: session, Cwd: t.Paths.Copy})
}

// AcceptBudget makes the proposed budget of rec this run's: the task's cap
// becomes what its runs have spent so far plus the proposal, in the
// proposal's currency. It returns the new cap and the one before (nil:
// none).
func (k *Kernel) AcceptBudget(t *task.Task, rec *memory.Recall) (budget.Money, *budget.Money, error) {
	if rec == nil || rec.Proposed == 0 {
		return budget.Money{}, nil, errors.New("budget: memory has no proposal (no similar run had a cost); set one with kule budget TASK AMOUNT")
	}
	before, err := budget.TaskCap(t.Paths.Dir)
	if err != nil {
		return budget.Money{}, nil, err
	}
	sum, err := budget.ForTask(k.store.Root, t.Paths.Dir, time.Now())
	if err != nil {
		return budget.Money{}, nil, err
	}
	cur := rec.Currency
	if cur == "" {
		cur = "USD"
	}
	spent := 0.0
	if sum.Usage != nil {
		spent = sum.Usage.Spent(cur)
	}
	c := budget.Money{Amount: math.Round((spent+rec.Proposed)*100) / 100, Currency: cur}
	if err := budget.SetTaskCap(t.Paths.Dir, &c); err != nil {
		return budget.Money{}, nil, err
	}
	return c, before, nil
}

// tailWriter keeps the last bytes written through it (a command's stderr)
// and passes everything on.
type tailWriter struct {
	mu  sync.Mutex
	w   interface{ Write([]byte) (int, error) }
	buf []byte
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*memory.MaxTail {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-memory.MaxTail:]...)
	}
	t.mu.Unlock()
	return t.w.Write(p)
}

func (t *tailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return memory.Tail(strings.ToValidUTF8(string(t.buf), ""), memory.MaxTail)
}

// limitName is the limit that err says stopped a run ("memory", "time",
// "budget", ...), or "" when it is not a limit's stop.
func limitName(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, budget.ErrSpent):
		return "budget"
	case errors.Is(err, limits.ErrStopped):
		msg := err.Error()
		if _, after, ok := strings.Cut(msg, limits.ErrStopped.Error()+": "); ok {
			if name, _, ok := strings.Cut(after, ":"); ok && !strings.ContainsAny(name, " \n") {
				return name
			}
		}
		return "limit"
	}
	return ""
}

// withStderrTail has the command's stderr (and its stdout, when they are
// one writer) pass through a tailWriter when it is not a file (a file, such as the terminal, is handed to the command as
// it is, so that the command still sees a terminal); nil when it is.
func withStderrTail(spec *runner.Spec) *tailWriter {
	if spec.Stderr == nil {
		return nil
	}
	if _, isFile := spec.Stderr.(*os.File); isFile {
		return nil
	}
	tw := &tailWriter{w: spec.Stderr}
	if spec.Stdout == spec.Stderr {
		// One writer for both (the daemon's output): it stays one, so
		// the command's writes stay in order and never race.
		spec.Stdout = tw
	}
	spec.Stderr = tw
	return tw
}
