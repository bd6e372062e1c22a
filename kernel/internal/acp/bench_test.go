package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"testing"
)

var benchUpdate = []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"0f3a","update":{"sessionUpdate":"tool_call","toolCallId":"toolu_01","title":"Write notes.md","kind":"edit","status":"pending","locations":[{"path":"/home/p/project/notes.md"}],"rawInput":{"file_path":"/home/p/project/notes.md","content":"# Notes\nline one\nline two\n"},"_meta":{"claudeCode":{"toolName":"Write"}}}}}`)

// BenchmarkDecode compares Kule's decoder with the naive peer, decoding into
// map[string]any, and prints the ratio.
func BenchmarkDecode(b *testing.B) {
	var ours, peer float64
	b.Run("kule", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Decode(benchUpdate); err != nil {
				b.Fatal(err)
			}
		}
		ours = perOp(b)
	})
	b.Run("peer=json-map", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m map[string]any
			if err := json.Unmarshal(benchUpdate, &m); err != nil {
				b.Fatal(err)
			}
		}
		peer = perOp(b)
	})
	fmt.Printf("Decode: kule %.0f ns/op, peer (json.Unmarshal into map[string]any) %.0f ns/op, ratio kule/peer %.2f\n", ours, peer, ours/peer)
}

func perOp(b *testing.B) float64 { return float64(b.Elapsed().Nanoseconds()) / float64(max(b.N, 1)) }

type echoHandler struct{}

func (echoHandler) HandleRequest(context.Context, string, json.RawMessage) (any, *RPCError) {
	return nil, nil
}
func (echoHandler) HandleNotification(string, json.RawMessage) {}
func (echoHandler) HandleBadLine([]byte, error)                {}

// BenchmarkRoundTrip compares a request and its answer through Conn over
// pipes with the floor: the same bytes written and read back over bare
// pipes by a goroutine that answers without decoding.
func BenchmarkRoundTrip(b *testing.B) {
	responder := func(r io.Reader, w io.Writer) {
		br := bufio.NewReader(r)
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				return
			}
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			json.Unmarshal(line, &m)
			w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"stopReason":"end_turn"}}` + "\n"))
		}
	}
	var ours, peer float64
	b.Run("kule", func(b *testing.B) {
		inR, inW, _ := os.Pipe()
		outR, outW, _ := os.Pipe()
		go responder(inR, outW)
		c := NewConn(outR, inW, echoHandler{}, nil)
		var res PromptResult
		for b.Loop() {
			if err := c.Call(context.Background(), "session/prompt", map[string]any{"sessionId": "s"}, &res); err != nil {
				b.Fatal(err)
			}
		}
		ours = perOp(b)
		inW.Close()
		outW.Close()
	})
	b.Run("peer=bare-pipes", func(b *testing.B) {
		inR, inW, _ := os.Pipe()
		outR, outW, _ := os.Pipe()
		go responder(inR, outW)
		br := bufio.NewReader(outR)
		req := []byte(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s"}}` + "\n")
		for b.Loop() {
			inW.Write(req)
			if _, err := br.ReadBytes('\n'); err != nil {
				b.Fatal(err)
			}
		}
		peer = perOp(b)
		inW.Close()
		outW.Close()
	})
	fmt.Printf("RoundTrip: kule Conn.Call %.0f ns/op, peer (bare pipe write+read) %.0f ns/op, ratio kule/peer %.2f\n", ours, peer, ours/peer)
}
