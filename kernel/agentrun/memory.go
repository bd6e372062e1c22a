package agentrun

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/internal/acp"
	"github.com/kulehq/kule/kernel/internal/memory"
)

// The hooks where a run is remembered (kernel/memory.go): memoryStart
// once the session is open, memoryAsk around every permission question,
// memoryUsage for every usage line, memoryEnd when the turn has ended. The
// kernel records them; none can fail the run.

// memo is what the run keeps for its record.
type memo struct {
	id        int64
	mu        sync.Mutex
	tokens    int64
	questions []memory.Question
	progress  atomic.Pointer[progressKeeper] // resume.go; set as the turn starts, read by events
}

// promptWithNotes is the prompt the agent gets: the person's, then the
// notes recall found (Options.Notes), set apart as Kule's data.
func (o Options) promptWithNotes() string {
	if o.Notes == "" {
		return o.Prompt
	}
	return o.Prompt + "\n\n---\n" + o.Notes
}

// images are Options.Pictures as the ACP client sends them.
func (o Options) images() []acp.Image {
	var out []acp.Image
	for _, p := range o.Pictures {
		out = append(out, acp.Image{Name: p.Name, PNG: p.PNG})
	}
	return out
}

func (r *Run) memoryStart() {
	session := ""
	if r.c != nil {
		session = r.c.SessionID()
	}
	r.memo.id = r.k.MemoryRunStarted(r.Task, kernel.MemoryRun{Agent: r.Profile.Name, AgentVersion: r.Agent, Session: session,
		Conversation: r.o.Conversation, Prompt: r.o.Prompt, Source: r.o.Source, Inputs: r.o.Inputs, Resumes: r.o.Resumes})
	r.startProgress(r.memo.id)
}

// memoryAsk records each question and its answer.
func (r *Run) memoryAsk(ask acp.AskFunc) acp.AskFunc {
	if ask == nil {
		return nil
	}
	return func(ctx context.Context, q acp.Question) (string, error) {
		answered := r.asking(q)
		a, err := ask(ctx, q)
		answered()
		ans := a
		if err != nil {
			ans = "no answer: " + err.Error()
		}
		r.memo.mu.Lock()
		r.memo.questions = append(r.memo.questions, memory.Question{Title: q.Title, Kind: q.Kind, Command: q.Command, Answer: ans})
		r.memo.mu.Unlock()
		return a, err
	}
}

// memoryUsage adds the tokens a prompt's usage reports.
func (r *Run) memoryUsage(u acp.Usage) {
	if len(u.Tokens) == 0 {
		return
	}
	var t map[string]any
	if json.Unmarshal(u.Tokens, &t) != nil {
		return
	}
	n := int64(0)
	for _, k := range []string{"totalTokens", "total_tokens"} {
		if v, ok := t[k].(float64); ok {
			n = int64(v)
		}
	}
	if n == 0 {
		for _, k := range []string{"inputTokens", "outputTokens", "input_tokens", "output_tokens"} {
			if v, ok := t[k].(float64); ok {
				n += int64(v)
			}
		}
	}
	r.memo.mu.Lock()
	r.memo.tokens += n
	r.memo.mu.Unlock()
}

func (r *Run) memoryEnd() {
	r.stopProgress()
	r.memo.mu.Lock()
	qs, tokens := r.memo.questions, r.memo.tokens
	r.memo.mu.Unlock()
	session := ""
	if r.c != nil {
		session = r.c.SessionID()
	}
	r.k.MemoryRunEnded(r.Task, r.memo.id, kernel.MemoryRunEnd{StopReason: r.res.StopReason, Err: r.err, LimitErr: r.res.LimitErr,
		AgentVersion: r.Agent, Session: session, Cost: r.Cost(), Tokens: tokens, Status: r.res.Status, Questions: qs})
}
