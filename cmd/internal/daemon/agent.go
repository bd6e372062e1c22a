package daemon

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/kulehq/kule/kernel/agentrun"

	"github.com/kulehq/kule/kernel"
)

// AgentRequest is a prompt typed in the app's command line for an agent.
type AgentRequest struct {
	Agent  string `json:"agent"`
	Prompt string `json:"prompt"`
	Fresh  bool   `json:"fresh"` // a new conversation even if the task has one
	// NoRecall gives the agent no notes from earlier runs (kule run
	// --no-recall).
	NoRecall bool `json:"no_recall,omitempty"`
	// Source and Inputs say who gave the prompt, for the memory of runs: the
	// chat host sets them for a chat user who is not the operator. Never read
	// from a request body, so the app cannot mark its own prompts.
	Source string   `json:"-"`
	Inputs []string `json:"-"`
	// Places are the places the prompt names (POST /about composed it):
	// their picture regions go to an agent that takes pictures as images.
	Places []string `json:"places,omitempty"`
	// Resumes is the interrupted run this turn resumes (POST /resume,
	// resume.go); never read from a request body.
	Resumes *kernel.MemoryRecord `json:"-"`
}

// AgentTurn is how an agent's turn ended, as the app's request returns it.
type AgentTurn struct {
	Agent      string   `json:"agent"`
	StopReason string   `json:"stop_reason"`
	Summary    string   `json:"summary,omitempty"` // the task's changes afterwards
	Error      string   `json:"error,omitempty"`
	Network    []string `json:"network,omitempty"`
	Seconds    float64  `json:"seconds"`
	Limit      string   `json:"limit,omitempty"` // the limit that stopped it (memory, disk, time, idle, task-time, budget)
}

func (d *Daemon) agentTask(w http.ResponseWriter, r *http.Request, t *kernel.Task) {
	var in AgentRequest
	if err := readBody(r, &in); err != nil {
		fail(w, err)
		return
	}
	if strings.TrimSpace(in.Agent) == "" || strings.TrimSpace(in.Prompt) == "" {
		fail(w, fmt.Errorf("%w: an agent and a prompt are needed", errBadRequest))
		return
	}
	turn, err := d.RunAgent(r.Context(), t, in)
	if err != nil && turn == nil {
		fail(w, err)
		return
	}
	writeJSON(w, 200, turn)
}

// RunAgent runs one agent turn on t through kernel/agentrun: its words, tool
// calls and what each changed go on the event stream ("agent" events), its
// permission questions wait under Needs you (refused when the task's wait
// runs out: the agent is told no and goes on without it). It returns when
// the turn has ended. The turn outlives the request that started it only
// until the daemon stops.
func (d *Daemon) RunAgent(ctx context.Context, t *kernel.Task, in AgentRequest) (*AgentTurn, error) {
	if d.cfg.AgentSet == nil {
		return nil, fmt.Errorf("agent: %w: this daemon runs no agents", errBadRequest)
	}
	set, err := d.cfg.AgentSet()
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	// The places' pictures are cut before the turn starts: a place that
	// cannot be read starts no run.
	pictures, err := d.aboutPictures(ctx, t, in.Places)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	if err := d.runs.begin(t.ID, cancel); err != nil {
		return nil, fmt.Errorf("agent %s: %w", t.ID, err)
	}
	defer d.runs.end(t.ID)
	defer d.busy()()
	start := time.Now()
	d.Bus.Publish("run", t.ID, map[string]any{"state": "start", "agent": in.Agent, "prompt": in.Prompt})
	notes := &outputSink{bus: d.Bus, task: t.ID}
	o := agentrun.Options{
		Agents: set, Agent: in.Agent, Prompt: in.Prompt, Fresh: in.Fresh,
		Source: in.Source, Inputs: in.Inputs,
		Ask:     d.permissionAsk(t, in.Agent),
		OnEvent: func(e kernel.AgentEvent) { d.publishAgent(t.ID, e) },
		Stderr:  notes,
	}
	o.Notes, o.Conversation, o.Resumes = d.resumeOptions(t, in) // resume.go
	o.Notes = d.recallNotes(rctx, t, in, o.Notes)               // recall.go
	if d.cfg.AgentOptions != nil {
		d.cfg.AgentOptions(&o)
	}
	o.Pictures = pictures
	onBudget := o.OnBudget
	o.OnBudget = func(n kernel.BudgetNotice) {
		// At 80% and 100% of a cap: Live shows it, and the app tells the
		// person when the window is behind.
		d.Bus.Publish("budget", t.ID, n)
		if onBudget != nil {
			onBudget(n)
		}
	}
	turn := &AgentTurn{Agent: in.Agent}
	end := func() {
		turn.Seconds = time.Since(start).Seconds()
		d.Bus.Publish("run", t.ID, map[string]any{"state": "end", "agent": turn.Agent, "stop_reason": turn.StopReason, "error": turn.Error, "summary": turn.Summary, "code": exitOf(turn), "limit": turn.Limit})
	}
	// This run's hooks only: connections the policy asks about wait for a person.
	kk := d.k.With(kernel.RunHooks{Net: d.netHooks(in.Agent)})
	logged := d.k.SandboxLogSize(t)
	run, err := agentrun.Start(rctx, kk, t, o)
	d.publishRefusals(t, logged) // a refused opening, or weaker isolation accepted
	if err != nil {
		turn.Error = err.Error()
		turn.Limit = stopLimit(kernel.LimitReasonNone, err) // a spent budget or task time starts no run
		end()
		return turn, err
	}
	turn.Agent = run.Agent
	stop := context.AfterFunc(rctx, run.Cancel) // Stop in the app cancels the turn
	defer stop()
	lim, _ := run.Limits()
	m := d.startMeter(t.ID, lim, func() kernel.LimitUsage { _, u := run.Limits(); return u })
	res, werr := run.Wait()
	turn.StopReason, turn.Network = res.StopReason, res.Network
	if res.Status != nil {
		turn.Summary = kernel.EffectsSummary(res.Status.Pending(false))
	}
	for _, e := range []error{werr, res.LimitErr, res.StopErr} {
		if e != nil && turn.Error == "" {
			turn.Error = e.Error()
		}
	}
	if res.LimitErr != nil {
		turn.Limit = stopLimit(run.Stopped(), res.LimitErr)
		if turn.Limit != "budget" { // the budget's watcher said it already
			// Why the run stopped is the turn's last word in Live.
			d.publishAgent(t.ID, kernel.AgentEvent{Type: kernel.AgentEventNotice, Text: "kule: " + res.LimitErr.Error()})
		}
	}
	m.End(turn.Limit)
	end()
	d.checkMeets(t)
	return turn, werr
}

func exitOf(t *AgentTurn) int {
	if t.Error != "" {
		return 1
	}
	return 0
}

// publishAgent puts one ACP event on the stream as the Live tab reads it.
func (d *Daemon) publishAgent(taskID string, e kernel.AgentEvent) {
	ev := map[string]any{"type": string(e.Type)}
	switch e.Type {
	case kernel.AgentEventText, kernel.AgentEventThought, kernel.AgentEventNotice:
		ev["text"] = e.Text
	case kernel.AgentEventStepStart, kernel.AgentEventStepUpdate, kernel.AgentEventStepEnd:
		if s := e.Step; s != nil {
			step := map[string]any{"n": s.N, "id": s.ID, "title": s.Title, "kind": s.Kind, "status": s.Status, "command": s.Command, "paths": s.Paths}
			var lines []string
			for _, x := range s.Effects {
				lines = append(lines, x.String())
			}
			for _, x := range s.Undone {
				lines = append(lines, "undone: "+x.String())
			}
			if lines != nil {
				step["effects"] = lines
			}
			if s.EffectsErr != "" {
				step["effects_error"] = s.EffectsErr
			}
			ev["step"] = step
		}
	case kernel.AgentEventPlan:
		ev["raw"] = e.Raw
	case kernel.AgentEventUsage:
		if e.Usage != nil {
			ev["usage"] = e.Usage
		}
	default:
		return // info and raw updates stay in steps.jsonl
	}
	d.Bus.Publish("agent", taskID, ev)
}

// permissionAsk turns an agent's session/request_permission into a question
// under Needs you: Approve picks the agent's allow-once option, Deny (or the
// wait running out) its reject-once option.
func (d *Daemon) permissionAsk(t *kernel.Task, agent string) kernel.AgentAskFunc {
	return func(ctx context.Context, aq kernel.AgentQuestion) (string, error) {
		title := aq.Title
		if title == "" {
			title = "a " + orWord(aq.Kind, "tool") + " call"
		}
		var detail []string
		if aq.Command != "" {
			detail = append(detail, "$ "+aq.Command)
		}
		if len(aq.Paths) > 0 {
			var ps []string
			for _, p := range aq.Paths {
				ps = append(ps, inCopy(t, p))
			}
			detail = append(detail, strings.Join(ps, ", "))
		}
		q, err := d.Q.Ask(ctx, Question{
			Task: t.ID, Kind: KindPermission,
			Title:   agent + " asks: " + title,
			Detail:  strings.Join(detail, " · "),
			Subject: agent + " " + orWord(aq.Kind, "other"),
		})
		if err != nil {
			if q.ID != "" {
				d.Q.Withdraw(q.ID, "run ended")
			}
			return "", &kernel.AgentAnswered{Option: PickOption(aq.Options, false), By: "no answer: " + err.Error()}
		}
		if q.By != "" && q.By != "person" {
			// The wait ran out (or a rule answered): the step says so.
			return "", &kernel.AgentAnswered{Option: PickOption(aq.Options, q.Approved()), By: q.By}
		}
		return PickOption(aq.Options, q.Approved()), nil
	}
}

// PickOption chooses the agent's once-only option of the answer; "" (the
// turn cancelled) when the agent offers none.
func PickOption(opts []kernel.PermissionOption, allow bool) string {
	want := "reject_once"
	if allow {
		want = "allow_once"
	}
	for _, o := range opts {
		if o.Kind == want {
			return o.OptionID
		}
	}
	if !allow {
		for _, o := range opts {
			if strings.HasPrefix(o.Kind, "reject") {
				return o.OptionID
			}
		}
	}
	return ""
}

func orWord(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// inCopy names a path the agent gave as the person knows it: relative to
// the folder when it is inside the task's copy.
func inCopy(t *kernel.Task, p string) string {
	if rel, err := filepath.Rel(t.Paths.Copy, p); err == nil && filepath.IsLocal(rel) {
		return filepath.ToSlash(rel)
	}
	return p
}
