package acp

import (
	"encoding/json"
	"testing"
	"time"
)

// FuzzDecode: any line either decodes into a message of one kind whose parts
// fit that kind, or is refused with ErrMessage; it never panics. A decoded
// message re-encodes and decodes to the same kind and method.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}`,
		`{"jsonrpc":"2.0","id":"abc","result":{"stopReason":"end_turn"},"_meta":{}}`,
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32002,"message":"not found"}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}`,
		`{"jsonrpc":"1.0","id":1,"method":"x"}`,
		`{"jsonrpc":"2.0","id":[1],"method":"x"}`,
		`{"jsonrpc":"2.0","id":1}`,
		`not json`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := Decode(line)
		if err != nil {
			return
		}
		switch m.Kind {
		case KindRequest:
			if m.Method == "" || len(m.ID) == 0 {
				t.Fatalf("request without method or id: %+v", m)
			}
			if !validID(m.ID) {
				t.Fatalf("bad id kept: %s", m.ID)
			}
		case KindNotification:
			if m.Method == "" || len(m.ID) != 0 {
				t.Fatalf("notification with id or without method: %+v", m)
			}
		case KindResponse:
			if m.Method != "" || (m.Result == nil && m.Error == nil) {
				t.Fatalf("response with a method or without result: %+v", m)
			}
			if m.Result != nil && m.Error != nil {
				t.Fatalf("response with both result and error")
			}
		default:
			t.Fatalf("decoded without a kind: %+v", m)
		}
		if m.Kind == KindRequest {
			var v any = map[string]any{}
			b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(m.ID), "method": m.Method, "params": v})
			if err != nil {
				t.Fatal(err)
			}
			m2, err := Decode(b)
			if err != nil || m2.Kind != KindRequest || m2.Method != m.Method || idKey(m2.ID) != idKey(m.ID) {
				t.Fatalf("re-encoded request: %+v, %v", m2, err)
			}
		}
	})
}

// FuzzUpdate: any session/update the agent sends is either shown, or kept
// as a step; the recorder never panics and every step line is JSON.
func FuzzUpdate(f *testing.F) {
	for _, s := range []string{
		`{"sessionUpdate":"tool_call","toolCallId":"a","title":"t","status":"completed","rawInput":{"command":["ls","-l"]}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"a","status":"failed","locations":[{"path":"/x"}]}`,
		`{"sessionUpdate":"usage_update","used":1,"size":2,"cost":{"amount":1,"currency":"USD"}}`,
		`{"sessionUpdate":"something_new","x":[1,2]}`,
		`{"sessionUpdate":"tool_call","toolCallId":""}`,
		`[]`,
		`"text"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		steps := &lockedBuffer{}
		r := &recorder{open: map[string]*Step{}, steps: steps, usage: steps, now: timeZero}
		r.update("s", raw)
		r.turnEnd("s", true)
		for _, line := range splitLines(steps.b.Bytes()) {
			if !json.Valid(line) {
				t.Fatalf("a line that is not json: %q", line)
			}
		}
	})
}

func splitLines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] != '\n' {
			i++
		}
		if i > 0 {
			out = append(out, b[:i])
		}
		if i == len(b) {
			break
		}
		b = b[i+1:]
	}
	return out
}
func timeZero() time.Time { return time.Time{} }

// FuzzQuotaUsage: whatever a prompt answer's _meta holds, quotaUsage
// returns nothing or ACP usage whose total is the sum of its parts.
func FuzzQuotaUsage(f *testing.F) {
	f.Add([]byte(`{"quota":{"token_count":{"input_tokens":12,"output_tokens":7},"model_usage":[]}}`))
	f.Add([]byte(`{"quota":{"token_count":{"input_tokens":-1,"output_tokens":7}}}`))
	f.Add([]byte(`{"quota":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		u := quotaUsage(b)
		if u == nil {
			return
		}
		var got struct{ InputTokens, OutputTokens, TotalTokens int64 }
		if err := json.Unmarshal(u, &got); err != nil || got.InputTokens < 0 || got.OutputTokens < 0 || got.TotalTokens != got.InputTokens+got.OutputTokens {
			t.Fatalf("quotaUsage(%s) = %s", b, u)
		}
	})
}

func TestQuotaUsage(t *testing.T) {
	t.Parallel()
	got := string(quotaUsage([]byte(`{"quota":{"token_count":{"input_tokens":12,"output_tokens":7},"model_usage":[]}}`)))
	if got != `{"inputTokens":12,"outputTokens":7,"totalTokens":19}` {
		t.Fatalf("Gemini CLI's _meta.quota read as %s", got)
	}
	if quotaUsage([]byte(`{"other":1}`)) != nil || quotaUsage(nil) != nil {
		t.Fatal("usage made up where there is none")
	}
}
