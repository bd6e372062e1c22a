package acp

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/kulehq/kule/kernel/internal/effects"
)

// EffectsFunc returns the task's effect set as it is now (the copy against
// its base). The engine provides it; the recorder calls it at the start of a
// turn and whenever a step ends, and a step's effects are the difference.
type EffectsFunc func() ([]effects.Effect, error)

// Step is one line of steps.jsonl: a tool call the agent made, or an update
// of a kind Kule does not know, kept whole.
type Step struct {
	N       int       `json:"n"`
	Session string    `json:"session,omitempty"`
	ID      string    `json:"id,omitempty"` // the agent's toolCallId
	Update  string    `json:"update"`       // the sessionUpdate kind that opened it
	Title   string    `json:"title,omitempty"`
	Kind    string    `json:"kind,omitempty"`   // read, edit, delete, move, search, execute, think, fetch, other
	Status  string    `json:"status,omitempty"` // pending, in_progress, completed, failed; "unfinished" when the turn ended first
	Command string    `json:"command,omitempty"`
	Paths   []string  `json:"paths,omitempty"`
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended,omitzero"`

	// Wrote lists the files the agent wrote through Kule (fs/write_text_file)
	// while the step was open.
	Wrote []string `json:"wrote,omitempty"`
	// Effects is what changed in the copy while the step ran: the effect set
	// after it, less the set before it. Undone lists effects that were there
	// before the step and are gone after it.
	Effects    []effects.Effect `json:"effects,omitempty"`
	Undone     []effects.Effect `json:"undone,omitempty"`
	EffectsErr string           `json:"effects_error,omitempty"`

	Permission []PermissionRecord `json:"permission,omitempty"`
	RawInput   json.RawMessage    `json:"raw_input,omitempty"`
	Raw        json.RawMessage    `json:"raw,omitempty"` // the whole update, for kinds Kule does not know
}

// PermissionRecord is one permission question and how it was answered.
type PermissionRecord struct {
	Time     time.Time          `json:"time"`
	Options  []PermissionOption `json:"options"`
	Chosen   string             `json:"chosen"`         // optionId, or "" when cancelled
	Kind     string             `json:"kind,omitempty"` // the chosen option's kind
	By       string             `json:"by"`             // "default" (Kule's allow_once), "person", "no answer", or what answered (Answered.By: "timeout", "rule")
	Note     string             `json:"note,omitempty"`
	ToolCall json.RawMessage    `json:"tool_call,omitempty"`
}

// Usage is one line of usage.jsonl.
type Usage struct {
	Time    time.Time       `json:"time"`
	Session string          `json:"session,omitempty"`
	Source  string          `json:"source"` // usage_update or prompt
	Used    *int64          `json:"used,omitempty"`
	Size    *int64          `json:"size,omitempty"`
	Cost    json.RawMessage `json:"cost,omitempty"`
	Tokens  json.RawMessage `json:"tokens,omitempty"` // the prompt response's usage
	Via     string          `json:"via,omitempty"`    // where the agent put it when not in usage ("_meta.quota": Gemini CLI)
}

// EventType says what an Event carries.
type EventType string

// Event types.
const (
	EventText       EventType = "text"    // agent_message_chunk
	EventThought    EventType = "thought" // agent_thought_chunk
	EventStepStart  EventType = "step"    // a tool call began
	EventStepUpdate EventType = "step_update"
	EventStepEnd    EventType = "step_end" // a tool call ended; Step.Effects filled
	EventPlan       EventType = "plan"
	EventUsage      EventType = "usage"
	EventPermission EventType = "permission"
	EventRaw        EventType = "raw"    // an update kind Kule does not know, kept as a step
	EventInfo       EventType = "info"   // a known update Kule does not act on
	EventNotice     EventType = "notice" // something the person should know (a bad line from the agent)
)

// Event is what the client streams while a turn runs.
type Event struct {
	Type  EventType
	Text  string
	Step  *Step
	Raw   json.RawMessage
	Usage *Usage // EventUsage: the line written to usage.jsonl
}

// recorder turns session updates into steps and usage lines.
type recorder struct {
	mu      sync.Mutex
	n       int
	open    map[string]*Step
	order   []string
	steps   io.Writer
	usage   io.Writer
	effects EffectsFunc
	last    []effects.Effect
	lastErr error
	emit    func(Event)
	now     func() time.Time
	mute    bool   // replaying a loaded session: nothing is new
	loaded  string // the session continued by session/load, whose replay may come late
	earlier []Step // the steps of earlier runs (Options.Earlier)
	werr    error
}

func (r *recorder) send(e Event) {
	if r.emit != nil {
		r.emit(e)
	}
}

func (r *recorder) writeLine(w io.Writer, v any) {
	if w == nil {
		return
	}
	b, err := json.Marshal(v)
	if err == nil {
		_, err = w.Write(append(b, '\n'))
	}
	if err != nil && r.werr == nil {
		r.werr = fmt.Errorf("acp: record: %w", err)
	}
}

// snapshot takes the effect set as the base of the next step.
func (r *recorder) snapshot() {
	if r.effects == nil {
		return
	}
	r.last, r.lastErr = r.effects()
}

func effectKey(e effects.Effect) string {
	return fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%d\x00%d", e.Kind, e.Path, e.From, e.Target, e.OldType, e.NewType)
}

func effectVal(e effects.Effect) string {
	return fmt.Sprintf("%d\x00%o\x00%d\x00%v\x00%d", e.Size, e.NewMode, e.NewType, e.Dir, e.Files)
}

// diffEffects returns what after has that before did not (or had otherwise),
// and what before had that after lost.
func diffEffects(before, after []effects.Effect) (added, undone []effects.Effect) {
	b := map[string]string{}
	for _, e := range before {
		b[effectKey(e)] = effectVal(e)
	}
	a := map[string]bool{}
	for _, e := range after {
		k := effectKey(e)
		a[k] = true
		if v, ok := b[k]; !ok || v != effectVal(e) {
			added = append(added, e)
		}
	}
	for _, e := range before {
		if !a[effectKey(e)] {
			undone = append(undone, e)
		}
	}
	return added, undone
}

// closeStep fills the step's effects, writes it and forgets it. Called with r.mu held.
func (r *recorder) closeStep(s *Step, status string) {
	if status != "" {
		s.Status = status
	}
	s.Ended = r.now()
	if r.effects != nil {
		after, err := r.effects()
		switch {
		case err != nil:
			s.EffectsErr = err.Error()
		case r.lastErr != nil:
			s.EffectsErr = "the effect set before the step is unknown: " + r.lastErr.Error()
			s.Effects = after
			r.last, r.lastErr = after, nil
		default:
			s.Effects, s.Undone = diffEffects(r.last, after)
			r.last = after
		}
	}
	delete(r.open, s.ID)
	for i, id := range r.order {
		if id == s.ID {
			r.order = append(r.order[:i], r.order[i+1:]...)
			break
		}
	}
	r.writeLine(r.steps, s)
	c := *s
	r.send(Event{Type: EventStepEnd, Step: &c})
}

func final(status string) bool { return status == "completed" || status == "failed" }

// update handles one session/update.
func (r *recorder) update(session string, raw json.RawMessage) {
	var head struct {
		SessionUpdate string `json:"sessionUpdate"`
	}
	if err := json.Unmarshal(raw, &head); err != nil || head.SessionUpdate == "" {
		r.rawStep(session, "", raw)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mute {
		return
	}
	switch head.SessionUpdate {
	case "agent_message_chunk", "agent_thought_chunk", "user_message_chunk":
		var c chunkFields
		if json.Unmarshal(raw, &c) != nil {
			r.rawStepLocked(session, head.SessionUpdate, raw)
			return
		}
		switch head.SessionUpdate {
		case "agent_message_chunk":
			if c.Content.Type == "text" {
				r.send(Event{Type: EventText, Text: c.Content.Text, Raw: raw})
			} else {
				r.send(Event{Type: EventInfo, Text: "agent sent " + c.Content.Type + " content", Raw: raw})
			}
		case "agent_thought_chunk":
			r.send(Event{Type: EventThought, Text: c.Content.Text, Raw: raw})
		default:
			r.send(Event{Type: EventInfo, Raw: raw})
		}
	case "tool_call", "tool_call_update":
		var f toolCallFields
		if json.Unmarshal(raw, &f) != nil || f.ToolCallID == "" {
			r.rawStepLocked(session, head.SessionUpdate, raw)
			return
		}
		r.toolCall(session, f, raw)
	case "plan":
		r.send(Event{Type: EventPlan, Raw: raw})
	case "usage_update":
		var u struct {
			Used *int64          `json:"used"`
			Size *int64          `json:"size"`
			Cost json.RawMessage `json:"cost"`
		}
		_ = json.Unmarshal(raw, &u)
		line := Usage{Time: r.now(), Session: session, Source: "usage_update", Used: u.Used, Size: u.Size, Cost: u.Cost}
		r.writeLine(r.usage, line)
		r.send(Event{Type: EventUsage, Raw: raw, Usage: &line})
	case "available_commands_update", "current_mode_update", "config_option_update", "session_info_update":
		r.send(Event{Type: EventInfo, Raw: raw})
	default:
		r.rawStepLocked(session, head.SessionUpdate, raw)
	}
}

func (r *recorder) rawStep(session, kind string, raw json.RawMessage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mute {
		return
	}
	r.rawStepLocked(session, kind, raw)
}

func (r *recorder) rawStepLocked(session, kind string, raw json.RawMessage) {
	r.n++
	now := r.now()
	s := &Step{N: r.n, Session: session, Update: kind, Status: "raw", Started: now, Ended: now, Raw: append(json.RawMessage(nil), raw...)}
	if !json.Valid(s.Raw) {
		s.Raw, _ = json.Marshal(string(raw))
	}
	r.writeLine(r.steps, s)
	r.send(Event{Type: EventRaw, Step: s, Raw: raw})
}

// quotaUsage reads the usage Gemini CLI puts in a prompt answer's
// _meta.quota.token_count as ACP's usage (inputTokens, outputTokens,
// totalTokens); nil when there is none.
func quotaUsage(meta json.RawMessage) json.RawMessage {
	if len(meta) == 0 {
		return nil
	}
	var m struct {
		Quota *struct {
			TokenCount *struct {
				Input  *int64 `json:"input_tokens"`
				Output *int64 `json:"output_tokens"`
			} `json:"token_count"`
		} `json:"quota"`
	}
	if json.Unmarshal(meta, &m) != nil || m.Quota == nil || m.Quota.TokenCount == nil || m.Quota.TokenCount.Input == nil || m.Quota.TokenCount.Output == nil {
		return nil
	}
	in, out := *m.Quota.TokenCount.Input, *m.Quota.TokenCount.Output
	if in < 0 || out < 0 {
		return nil
	}
	b, _ := json.Marshal(map[string]int64{"inputTokens": in, "outputTokens": out, "totalTokens": in + out})
	return b
}

// replayed reports whether a tool call update is a loaded session's
// replay of a step an earlier run recorded: the same session and
// toolCallId, already final when it first appears (new work starts pending
// or in progress). Gemini CLI replays so after answering session/load.
func (r *recorder) replayed(session string, f toolCallFields) bool {
	if r.loaded == "" || session != r.loaded || f.Status == nil || !final(*f.Status) {
		return false
	}
	if _, open := r.open[f.ToolCallID]; open {
		return false
	}
	for _, s := range r.earlier {
		if s.Session == session && s.ID == f.ToolCallID {
			return true
		}
	}
	return false
}

func (r *recorder) toolCall(session string, f toolCallFields, raw json.RawMessage) {
	if r.replayed(session, f) {
		return
	}
	s, ok := r.open[f.ToolCallID]
	if !ok {
		// A tool_call_update for a call Kule has not seen (it came first,
		// out of order) opens the step just the same.
		r.n++
		s = &Step{N: r.n, Session: session, ID: f.ToolCallID, Update: f.SessionUpdate, Status: "pending", Started: r.now()}
		r.open[f.ToolCallID] = s
		r.order = append(r.order, f.ToolCallID)
	}
	if f.Title != nil {
		s.Title = *f.Title
	}
	if f.Kind != nil {
		s.Kind = *f.Kind
	}
	if f.Status != nil {
		s.Status = *f.Status
	}
	for _, l := range f.Locations {
		s.Paths = appendUnique(s.Paths, l.Path)
	}
	for _, c := range f.Content {
		if c.Type == "diff" && c.Path != "" {
			s.Paths = appendUnique(s.Paths, c.Path)
		}
	}
	if len(f.RawInput) > 0 && string(f.RawInput) != "null" {
		s.RawInput = append(json.RawMessage(nil), f.RawInput...)
		if cmd := commandOf(f.RawInput); cmd != "" {
			s.Command = cmd
		}
		for _, p := range pathsOf(f.RawInput) {
			s.Paths = appendUnique(s.Paths, p)
		}
	}
	c := *s
	if !ok {
		r.send(Event{Type: EventStepStart, Step: &c, Raw: raw})
	} else {
		r.send(Event{Type: EventStepUpdate, Step: &c, Raw: raw})
	}
	if final(s.Status) {
		r.closeStep(s, "")
	}
}

func appendUnique(list []string, s string) []string {
	if s == "" {
		return list
	}
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// commandOf finds the shell command in a tool call's rawInput, in the shapes
// agents use: {"command": "ls"}, {"command": ["bash","-lc","ls"]}, {"cmd": …}.
func commandOf(raw json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	for _, k := range []string{"command", "cmd"} {
		v, ok := m[k]
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal(v, &s) == nil {
			return s
		}
		var l []string
		if json.Unmarshal(v, &l) == nil {
			return strings.Join(l, " ")
		}
	}
	return ""
}

func pathsOf(raw json.RawMessage) []string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	var out []string
	for _, k := range []string{"path", "file_path", "filePath", "notebook_path", "abs_path"} {
		var s string
		if v, ok := m[k]; ok && json.Unmarshal(v, &s) == nil && s != "" {
			out = append(out, s)
		}
	}
	return out
}

// wrote notes a file written through Kule in every open step.
func (r *recorder) wrote(path string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range r.order {
		s := r.open[id]
		s.Wrote = appendUnique(s.Wrote, path)
	}
}

// permission notes a permission answer on the step it is about.
func (r *recorder) permission(session, toolCallID string, rec PermissionRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.open[toolCallID]
	if !ok {
		r.n++
		s = &Step{N: r.n, Session: session, ID: toolCallID, Update: "session/request_permission", Status: "pending", Started: r.now()}
		if toolCallID == "" {
			s.ID = fmt.Sprintf("permission-%d", r.n)
		}
		var f toolCallFields
		if json.Unmarshal(rec.ToolCall, &f) == nil {
			if f.Title != nil {
				s.Title = *f.Title
			}
			if f.Kind != nil {
				s.Kind = *f.Kind
			}
		}
		r.open[s.ID] = s
		r.order = append(r.order, s.ID)
	}
	s.Permission = append(s.Permission, rec)
	r.send(Event{Type: EventPermission, Step: &Step{ID: s.ID, Title: s.Title, Permission: []PermissionRecord{rec}}})
}

// turnStart closes what an earlier turn left open and takes the effect set
// this turn starts from.
func (r *recorder) turnStart(session string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.order) > 0 {
		r.endLocked(session, true)
	}
	r.snapshot()
}

// turnEnd is called when a turn's answer has come (final false) and when the
// agent stops (final true). A step still open when the answer comes may yet
// end (agents send updates after the answer), so it is left open then; at
// the final call it is closed as "unfinished". Whatever changed in the copy outside any step is recorded as a
// step of its own once no step is open, so nothing goes unaccounted.
func (r *recorder) turnEnd(session string, final bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endLocked(session, final)
}

func (r *recorder) endLocked(session string, final bool) {
	if final {
		for len(r.order) > 0 {
			r.closeStep(r.open[r.order[0]], "unfinished")
		}
	}
	if r.effects == nil || len(r.order) > 0 {
		return
	}
	after, err := r.effects()
	if err != nil {
		return
	}
	added, undone := diffEffects(r.last, after)
	if len(added)+len(undone) == 0 || r.lastErr != nil {
		r.last, r.lastErr = after, nil
		return
	}
	r.n++
	now := r.now()
	s := &Step{N: r.n, Session: session, Update: "outside_tool_calls", Title: "changes made outside any tool call", Status: "completed", Started: now, Ended: now, Effects: added, Undone: undone}
	r.last = after
	r.writeLine(r.steps, s)
	r.send(Event{Type: EventStepEnd, Step: s})
}

func (r *recorder) promptUsage(session string, usage, meta json.RawMessage) {
	via := ""
	if len(usage) == 0 || string(usage) == "null" {
		if usage = quotaUsage(meta); usage == nil {
			return
		}
		via = "_meta.quota"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	line := Usage{Time: r.now(), Session: session, Source: "prompt", Tokens: usage, Via: via}
	r.writeLine(r.usage, line)
	r.send(Event{Type: EventUsage, Raw: usage, Usage: &line})
}
