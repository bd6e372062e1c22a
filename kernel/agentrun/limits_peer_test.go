package agentrun_test

// The scripted agent's turns for the limits and budget tests.

import (
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

// limitsScript plays the turn of script, answering the prompt id; false
// when script is not one of these.
func (p *peer) limitsScript(script string, id any, cwd string) bool {
	switch script {
	case "deaf":
		// Ignores the cancel and the end of its input: only a kill ends it.
		p.update("s1", map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": "waiting"}})
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
		time.Sleep(time.Hour)
	case "spend":
		// Reports its session's cost as it works, fifty cents a step,
		// until the turn is cancelled.
		for i := 1; i <= 200 && !p.spendStep(cwd, float64(i)*0.5); i++ {
		}
		p.send(map[string]any{"id": id, "result": map[string]any{"stopReason": "cancelled"}})
	default:
		return false
	}
	return true
}

// spendStep reports cost (the session's so far) and waits until the client
// handled it; true when a session/cancel came meanwhile.
func (p *peer) spendStep(cwd string, cost float64) (cancelled bool) {
	p.update("s1", map[string]any{"sessionUpdate": "usage_update", "used": 10, "size": 100, "cost": map[string]any{"amount": cost, "currency": "USD"}})
	id := p.nextID
	p.nextID++
	p.send(map[string]any{"id": id, "method": "fs/read_text_file", "params": map[string]any{"sessionId": "s1", "path": filepath.Join(cwd, "a.txt")}})
	for {
		m := p.read()
		if m["method"] == "session/cancel" {
			cancelled = true
		}
		if m["method"] == nil && m["id"] == float64(id) {
			return cancelled
		}
	}
}
