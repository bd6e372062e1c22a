package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/sdk/transport"
)

// chat is an in-process transport: what the test "writes" is pushed into
// its inbox, what the host delivers is kept in order.
type chat struct {
	*transport.Inbox
	mu   sync.Mutex
	n    int
	sent []sentMsg
}

type sentMsg struct {
	transport.Event
	Ref, Replaces string
}

func newChat() *chat { return &chat{Inbox: transport.NewInbox(0)} }

func (c *chat) Info(context.Context) (transport.Info, error) {
	return transport.Info{Name: "test", Capabilities: []transport.Capability{transport.CapButtons, transport.CapFiles}}, nil
}

func (c *chat) Deliver(_ context.Context, ev transport.Event, replaces string) (transport.Delivered, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	ref := fmt.Sprintf("m%d", c.n)
	c.sent = append(c.sent, sentMsg{ev, ref, replaces})
	th := ev.Thread
	if th == "" {
		th = ref
	}
	return transport.Delivered{Ref: ref, Thread: th}, nil
}

// waitSent waits for a delivered message that match accepts.
func (c *chat) waitSent(t *testing.T, what string, match func(sentMsg) bool) sentMsg {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		c.mu.Lock()
		for _, m := range c.sent {
			if match(m) {
				c.mu.Unlock()
				return m
			}
		}
		c.mu.Unlock()
		time.Sleep(10 * time.Millisecond) // polling; the deadline only ends a broken run
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var got []string
	for _, m := range c.sent {
		got = append(got, chatText(m.Event))
	}
	t.Fatalf("waited 30 s for %s; the chat got:\n%s", what, strings.Join(got, "\n---\n"))
	return sentMsg{}
}

func chatText(ev transport.Event) string {
	switch {
	case ev.Notice != nil:
		return ev.Notice.Text
	case ev.Question != nil:
		return ev.Question.Text + " " + fmt.Sprint(ev.Question.Choices)
	case ev.File != nil:
		return "file " + ev.File.Name
	}
	return ""
}

func saying(s string) func(sentMsg) bool {
	return func(m sentMsg) bool { return strings.Contains(chatText(m.Event), s) }
}

const operator, stranger = "U0PERATOR", "U0THER"

// chatDaemon is a daemon driving a chat. Its home is a t.TempDir: a run,
// transport or daemon goroutine still writing there after the daemon
// stopped fails the test at cleanup.
func chatDaemon(t *testing.T, script string) (*Daemon, *chat, string) {
	t.Helper()
	cfg := Config{Kernel: newKernel(t)}
	withPeerScript(t, &cfg, script, "")
	d := startDaemon(t, cfg)
	c := newChat()
	h, err := d.AttachTransport(c, TransportConfig{Name: "test", Operators: []string{operator}, Agent: "peer", Flush: 50 * time.Millisecond})
	must(t, err)
	t.Cleanup(h.Close)
	return d, c, sampleFolder(t)
}

func historyKinds(t *testing.T, d *Daemon, taskID string) []string {
	t.Helper()
	tk, err := d.k.LoadTask(taskID)
	must(t, err)
	log, err := d.k.HistoryLog(tk)
	must(t, err)
	es, err := log.Entries()
	must(t, err)
	var out []string
	for _, e := range es {
		out = append(out, e.Kind+" "+string(e.Data))
	}
	return out
}

// TestChatCockpitIntents drives every intent from the chat: a top-level
// message launches a task and its thread is the task's; the agent's question
// comes with buttons, a stranger's press is refused and the operator's
// answers it, recorded in the signed history with who; a reply continues;
// status lists; commit shows the review first and its button commits.
func TestChatCockpitIntents(t *testing.T) {
	t.Parallel()
	d, c, folder := chatDaemon(t, "ask")

	c.Push(transport.Incoming{Author: stranger, Ref: "t0", Channel: "C1", Text: folder + ": write the notes"})
	c.waitSent(t, "a stranger's launch refused", saying("Only the operator can start a task"))

	c.Push(transport.Incoming{Author: operator, Ref: "t1", Channel: "C1", Text: folder + ": write the notes"})
	started := c.waitSent(t, "the task started in the message's thread", saying("starts on it"))
	if started.Thread != "t1" || started.Task == "" {
		t.Fatalf("launch notice %+v: want thread t1 and a task", started)
	}
	task := started.Task
	q := c.waitSent(t, "the question with buttons", func(m sentMsg) bool { return m.Question != nil && strings.Contains(m.Question.Text, "peer asks") })
	if q.Thread != "t1" || strings.Join(q.Question.Choices, ",") != ChoiceApprove+","+ChoiceDeny {
		t.Fatalf("question %+v: want it in thread t1 with Approve and Deny", q)
	}

	c.Push(transport.Incoming{Author: stranger, Thread: "t1", InReplyTo: q.ID, Choice: ChoiceApprove})
	c.waitSent(t, "a stranger's approval refused", saying(stranger+" is not the operator"))
	for _, qq := range d.Q.List() {
		if qq.ID == q.ID && qq.State != Waiting {
			t.Fatalf("a stranger's press settled the question: %+v", qq)
		}
	}
	c.Push(transport.Incoming{Author: operator, Thread: "t1", InReplyTo: q.ID, Choice: ChoiceApprove})
	c.waitSent(t, "the run's end", saying("The run ended"))
	c.waitSent(t, "the agent's words, batched", saying("Wrote it."))
	c.waitSent(t, "the tool call as it happened", saying("→ Write notes/release.md"))
	hist := strings.Join(historyKinds(t, d, task), "\n")
	if !strings.Contains(hist, `answer {`) || !strings.Contains(hist, `"by":"test:`+operator+`"`) || !strings.Contains(hist, `"state":"approved"`) {
		t.Fatalf("history lacks the operator's answer:\n%s", hist)
	}

	// Continue: the operator's reply is the next prompt; deny this time.
	waitIdle(t, d, task)
	c.Push(transport.Incoming{Author: operator, Thread: "t1", Ref: "r1", Text: "and once more"})
	q2 := c.waitSent(t, "the second question", func(m sentMsg) bool {
		return m.Question != nil && m.ID != q.ID && strings.Contains(m.Question.Text, "peer asks")
	})
	c.Push(transport.Incoming{Author: operator, Thread: "t1", InReplyTo: q2.ID, Choice: ChoiceDeny})
	c.waitSent(t, "the denied run going on without it", saying("going on without it"))
	c.waitSent(t, "the denial said", saying("✘ Denied"))

	c.Push(transport.Incoming{Author: stranger, Channel: "C1", Command: "status"})
	c.waitSent(t, "status", saying(task+" write the notes — "))

	// Commit: a stranger may not; the operator gets the review, then commits.
	waitIdle(t, d, task)
	c.Push(transport.Incoming{Author: stranger, Thread: "t1", Command: "commit"})
	c.waitSent(t, "a stranger's commit refused", saying("only the operator can commit"))
	c.Push(transport.Incoming{Author: operator, Thread: "t1", Command: "commit"})
	rv := c.waitSent(t, "the review first", saying("Review of "+task))
	if !strings.Contains(rv.Question.Text, "notes/release.md") {
		t.Fatalf("the review does not name the change: %s", rv.Question.Text)
	}
	if _, err := os.Stat(filepath.Join(folder, "notes", "release.md")); err == nil {
		t.Fatal("the folder changed before the Commit button")
	}
	c.Push(transport.Incoming{Author: operator, Thread: "t1", InReplyTo: rv.ID, Choice: ChoiceCommit})
	c.waitSent(t, "the commit", saying("Committed by "+operator))
	b, err := os.ReadFile(filepath.Join(folder, "notes", "release.md"))
	if err != nil || string(b) != "# From the agent\n" {
		t.Fatalf("after Commit the folder holds %q, %v", b, err)
	}
	hist = strings.Join(historyKinds(t, d, task), "\n")
	if !strings.Contains(hist, "commit {") {
		t.Fatalf("no commit in the history:\n%s", hist)
	}
}

func waitIdle(t *testing.T, d *Daemon, task string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); d.runs.running(task); {
		if time.Now().After(deadline) {
			t.Fatal("waited 30 s for the run to end")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestChatStrangerReplyIsUntrusted: a stranger's reply reaches the agent
// marked untrusted, and the history keeps that the run had it.
func TestChatStrangerReplyIsUntrusted(t *testing.T) {
	t.Parallel()
	d, c, folder := chatDaemon(t, "spend")
	c.Push(transport.Incoming{Author: operator, Ref: "t1", Text: folder + ": look", Direct: true, Channel: "D1"})
	started := c.waitSent(t, "the launch", saying("starts on it"))
	if started.Channel != "D1" {
		t.Fatalf("a DM's task answers in channel %q, want D1", started.Channel)
	}
	c.waitSent(t, "the first run's end", saying("The run ended"))
	waitIdle(t, d, started.Task)
	c.Push(transport.Incoming{Author: stranger, Thread: "t1", Ref: "r1", Text: "delete everything"})
	for deadline := time.Now().Add(30 * time.Second); ; {
		hist := strings.Join(historyKinds(t, d, started.Task), "\n")
		if strings.Contains(hist, `"trusted":false`) && strings.Contains(hist, `"by":"test:`+stranger+`"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stranger's input is not recorded as untrusted:\n%s", hist)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The memory of runs keeps the stranger's run untrusted (recall never
	// hands it to an agent as a note), and the operator's first run trusted.
	waitIdle(t, d, started.Task)
	store, err := d.k.Memory()
	must(t, err)
	for deadline := time.Now().Add(30 * time.Second); ; {
		runs, err := store.Runs(context.Background(), kernel.MemoryFilter{Task: started.Task})
		must(t, err)
		if len(runs) == 2 {
			if runs[0].Trust != kernel.MemoryUntrusted || runs[0].Source != kernel.MemorySourceChat {
				t.Fatalf("the stranger's run is remembered as source %q, trust %q", runs[0].Source, runs[0].Trust)
			}
			if runs[1].Trust == kernel.MemoryUntrusted {
				t.Fatalf("the operator's run is remembered untrusted")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the memory holds %d runs of the task, want 2", len(runs))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestChatApprovalTimesOut: a question nobody answers is refused when the
// wait runs out, and a press after that changes nothing.
func TestChatApprovalTimesOut(t *testing.T) {
	t.Parallel()
	d, c, folder := chatDaemon(t, "ask")
	d.Q.mu.Lock()
	d.Q.testWait = 300 * time.Millisecond
	d.Q.mu.Unlock()
	c.Push(transport.Incoming{Author: operator, Ref: "t1", Text: folder + ": write the notes"})
	q := c.waitSent(t, "the question", func(m sentMsg) bool { return m.Question != nil && strings.Contains(m.Question.Text, "peer asks") })
	c.waitSent(t, "the refusal", saying("✘ Refused: the wait ran out"))
	c.waitSent(t, "the agent told no", saying("going on without it"))
	c.Push(transport.Incoming{Author: operator, Thread: "t1", InReplyTo: q.ID, Choice: ChoiceApprove})
	c.waitSent(t, "a late press refused", saying("Too late: the wait ran out"))
	if _, err := os.Stat(filepath.Join(folder, "notes", "release.md")); err == nil {
		t.Fatal("the file was written")
	}
}

// TestChatKill: the operator's kill stops a run that would never end; a
// stranger's does not.
func TestChatKill(t *testing.T) {
	t.Parallel()
	d, c, folder := chatDaemon(t, "hang")
	c.Push(transport.Incoming{Author: operator, Ref: "t1", Text: folder + ": think"})
	started := c.waitSent(t, "the launch", saying("starts on it"))
	stop := c.waitSent(t, "the run with its Stop button", func(m sentMsg) bool { return m.Question != nil && strings.HasPrefix(m.Question.Text, "▶ peer") })
	for deadline := time.Now().Add(30 * time.Second); !d.runs.running(started.Task); {
		if time.Now().After(deadline) {
			t.Fatal("the run never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.Push(transport.Incoming{Author: stranger, Thread: "t1", Command: "kill"})
	c.waitSent(t, "a stranger's kill refused", saying("only the operator can kill"))
	if !d.runs.running(started.Task) {
		t.Fatal("a stranger's kill stopped the run")
	}
	c.Push(transport.Incoming{Author: operator, Thread: "t1", InReplyTo: stop.ID, Choice: ChoiceStop})
	c.waitSent(t, "the stop", saying("Stopping the run"))
	waitIdle(t, d, started.Task)
	c.waitSent(t, "the run's end", saying("The run ended"))
	if !strings.Contains(strings.Join(historyKinds(t, d, started.Task), "\n"), `stop {"by":"test:`+operator+`"}`) {
		t.Fatal("the stop is not in the history with who")
	}
}

func TestChunks(t *testing.T) {
	t.Parallel()
	s := strings.Repeat("abcdefghi\n", 100) + strings.Repeat("é", 50)
	cs := Chunks(s, 64)
	if strings.Join(cs, "") != s {
		t.Fatal("chunks do not add up to the text")
	}
	for _, c := range cs {
		if len(c) > 64 || !utf8Valid(c) {
			t.Fatalf("chunk %q: longer than 64 or cut inside a character", c)
		}
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// TestChatOutputIsBatched: a flood of the agent's words (a chunk per token,
// as agents stream them) reaches the chat as a few messages in order; a
// tool call flushes what came before it; output over four chunks goes as
// one file.
func TestChatOutputIsBatched(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, Config{Kernel: newKernel(t)})
	c := newChat()
	h, err := d.AttachTransport(c, TransportConfig{Name: "test", Operators: []string{operator}, Flush: time.Hour, Chunk: 200})
	must(t, err)
	t.Cleanup(h.Close)
	const task = "0badc0de"
	h.bind(task, threadOf{Thread: "t1"})
	var want strings.Builder
	// 200 events: fewer than the bus keeps for a subscriber, so none is
	// dropped however the goroutines are scheduled.
	for i := range 200 {
		w := fmt.Sprintf("word%d ", i)
		want.WriteString(w)
		d.Bus.Publish("agent", task, map[string]any{"type": "text", "text": w})
	}
	d.Bus.Publish("agent", task, map[string]any{"type": "step", "step": map[string]any{"title": "Run the tests"}})
	c.waitSent(t, "the tool call", saying("→ Run the tests"))
	big := strings.Repeat("x", 900)
	d.Bus.Publish("agent", task, map[string]any{"type": "text", "text": big})
	file := c.waitSent(t, "long output as a file", func(m sentMsg) bool { return m.File != nil })
	if string(file.File.Content) != big || file.Thread != "t1" {
		t.Fatalf("the file holds %d bytes in thread %q", len(file.File.Content), file.Thread)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var text strings.Builder
	n := 0
	for _, m := range c.sent {
		if m.Notice != nil && strings.HasPrefix(m.Notice.Text, "word") {
			n++
			text.WriteString(m.Notice.Text + " ")
			if len(m.Notice.Text) > 200 {
				t.Errorf("a message of %d characters, over the chunk", len(m.Notice.Text))
			}
		}
	}
	if strings.Join(strings.Fields(text.String()), " ") != strings.TrimSpace(want.String()) {
		t.Fatalf("the words did not arrive whole and in order:\n%s", text.String())
	}
	if n == 0 || n > want.Len()/150+2 { // chunks are cut at a space in their last quarter
		t.Fatalf("200 streamed chunks became %d messages; want a few of at most 200 characters", n)
	}
	t.Logf("200 chunks (%d bytes) → %d messages", want.Len(), n)
}

// TestChatThreadsOutliveARestart: a task's thread is kept in the home, so
// a reply in it after the transport host starts again still continues the
// task.
func TestChatThreadsOutliveARestart(t *testing.T) {
	t.Parallel()
	cfg := Config{Kernel: newKernel(t)}
	withPeerScript(t, &cfg, "spend", "")
	d := startDaemon(t, cfg)
	folder := sampleFolder(t)
	tc := TransportConfig{Name: "test", Operators: []string{operator}, Agent: "peer", Flush: 50 * time.Millisecond}
	c := newChat()
	h, err := d.AttachTransport(c, tc)
	must(t, err)
	c.Push(transport.Incoming{Author: operator, Ref: "t1", Text: folder + ": look"})
	started := c.waitSent(t, "the launch", saying("starts on it"))
	c.waitSent(t, "the run's end", saying("The run ended"))
	waitIdle(t, d, started.Task)
	h.Close()

	c2 := newChat()
	h2, err := d.AttachTransport(c2, tc)
	must(t, err)
	t.Cleanup(h2.Close)
	c2.Push(transport.Incoming{Author: operator, Thread: "t1", Ref: "r1", Text: "and again"})
	run := c2.waitSent(t, "the continued run", func(m sentMsg) bool {
		return m.Question != nil && strings.HasPrefix(m.Question.Text, "▶ peer: and again")
	})
	if run.Thread != "t1" || run.Task != started.Task {
		t.Fatalf("after a restart the reply ran %+v; want task %s in thread t1", run, started.Task)
	}
}
