// Package acp is Kule's client for the Agent Client Protocol (ACP v1):
// newline-delimited JSON-RPC 2.0 over an agent's stdin and stdout. Kule is the
// client: it starts the agent through a runner.Runner, opens a session whose
// working directory is the task's copy, sends prompts, serves the agent's
// fs/* and terminal/* requests inside the copy, answers permission questions
// and records every tool call as a step with what it changed.
package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// ProtocolVersion is the ACP major version Kule speaks.
const ProtocolVersion = 1

// Errors a caller can test for.
var (
	ErrMessage      = errors.New("acp: not a json-rpc message")
	ErrClosed       = errors.New("acp: connection closed")
	ErrAgentExited  = errors.New("acp: agent exited")
	ErrProtocol     = errors.New("acp: agent speaks another protocol version")
	ErrOutsideCopy  = errors.New("acp: path outside the task's copy")
	ErrNoSession    = errors.New("acp: no session")
	ErrNoTerminal   = errors.New("acp: no such terminal")
	ErrNotSupported = errors.New("acp: agent does not offer this")
)

// JSON-RPC and ACP error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	CodeAuthRequired   = -32000
	CodeNotFound       = -32002 // resource not found (a missing file)
)

// ID is a JSON-RPC id kept as its raw JSON (a number or a string), so an id
// the agent chose is echoed back byte for byte.
type ID = json.RawMessage

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string {
	if len(e.Data) > 0 {
		return fmt.Sprintf("acp: agent error %d: %s (%s)", e.Code, e.Message, e.Data)
	}
	return fmt.Sprintf("acp: agent error %d: %s", e.Code, e.Message)
}

// Kind says what a message is.
type Kind int

// Message kinds.
const (
	KindRequest      Kind = iota + 1 // method and id: the peer wants an answer
	KindNotification                 // method, no id
	KindResponse                     // id and result or error: an answer to one of ours
)

// Message is one decoded JSON-RPC message. Params and Result stay raw: the
// caller decodes what it understands and keeps the rest.
type Message struct {
	Kind   Kind
	ID     ID
	Method string
	Params json.RawMessage
	Result json.RawMessage
	Error  *RPCError
}

type wireMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  *string         `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// Decode reads one line of the stream as a JSON-RPC 2.0 message. It accepts
// any extra members (ACP's _meta among them) and refuses what is not a
// request, a notification or a response.
func Decode(line []byte) (Message, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return Message{}, fmt.Errorf("%w: not a json object", ErrMessage)
	}
	var w wireMessage
	if err := json.Unmarshal(line, &w); err != nil {
		return Message{}, fmt.Errorf("%w: %v", ErrMessage, err)
	}
	if w.JSONRPC != "2.0" {
		return Message{}, fmt.Errorf("%w: jsonrpc is %q, not \"2.0\"", ErrMessage, w.JSONRPC)
	}
	id := bytes.TrimSpace(w.ID)
	if bytes.Equal(id, []byte("null")) {
		id = nil
	}
	if len(id) > 0 && !validID(id) {
		return Message{}, fmt.Errorf("%w: id %s is neither a number nor a string", ErrMessage, id)
	}
	m := Message{ID: id, Params: w.Params, Result: w.Result, Error: w.Error}
	switch {
	case w.Method != nil:
		if *w.Method == "" {
			return Message{}, fmt.Errorf("%w: empty method", ErrMessage)
		}
		m.Method = *w.Method
		if len(id) > 0 {
			m.Kind = KindRequest
		} else {
			m.Kind = KindNotification
		}
	case len(id) > 0 && (w.Result != nil || w.Error != nil):
		if w.Result != nil && w.Error != nil {
			return Message{}, fmt.Errorf("%w: both result and error", ErrMessage)
		}
		m.Kind = KindResponse
	case w.Error != nil:
		// An error without an id answers a message the peer could not parse.
		m.Kind = KindResponse
	default:
		return Message{}, fmt.Errorf("%w: neither method nor result nor error", ErrMessage)
	}
	return m, nil
}

func validID(id []byte) bool {
	var v any
	if err := json.Unmarshal(id, &v); err != nil {
		return false
	}
	switch v.(type) {
	case float64, string:
		return true
	}
	return false
}

// idKey is the form an id takes as a map key: numbers normalised, so 1 and
// 1.0 meet; strings quoted, so "1" and 1 stay apart.
func idKey(id ID) string {
	var v any
	if err := json.Unmarshal(id, &v); err != nil {
		return string(id)
	}
	switch x := v.(type) {
	case float64:
		return fmt.Sprintf("n%g", x)
	case string:
		return "s" + x
	}
	return string(id)
}

func encodeRequest(id int64, method string, params any) ([]byte, error) {
	return json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int64  `json:"id"`
		Method  string `json:"method"`
		Params  any    `json:"params,omitempty"`
	}{"2.0", id, method, params})
}

func encodeNotification(method string, params any) ([]byte, error) {
	return json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params,omitempty"`
	}{"2.0", method, params})
}

func encodeResponse(id ID, result any, rpcErr *RPCError) ([]byte, error) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	if rpcErr != nil {
		return json.Marshal(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   *RPCError       `json:"error"`
		}{"2.0", id, rpcErr})
	}
	if result == nil {
		result = struct{}{}
	}
	return json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result"`
	}{"2.0", id, result})
}
