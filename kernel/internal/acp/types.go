package acp

import "encoding/json"

// The ACP messages Kule sends or reads. Fields Kule does not use are not
// declared: json ignores them, and whatever Kule must keep stays raw.

type fsCaps struct {
	ReadTextFile  bool `json:"readTextFile"`
	WriteTextFile bool `json:"writeTextFile"`
}

type clientCaps struct {
	FS       fsCaps `json:"fs"`
	Terminal bool   `json:"terminal"`
}

type implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

type initializeParams struct {
	ProtocolVersion    int            `json:"protocolVersion"`
	ClientCapabilities clientCaps     `json:"clientCapabilities"`
	ClientInfo         implementation `json:"clientInfo"`
}

// AuthMethod is one way the agent offers to authenticate. Its type may be
// one Kule does not know; the whole object is kept in Raw.
type AuthMethod struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Type        string          `json:"type,omitempty"`
	Raw         json.RawMessage `json:"-"`
}

// AgentInfo is what initialize told of the agent.
type AgentInfo struct {
	ProtocolVersion int
	Name, Version   string
	LoadSession     bool // session/load offered
	ResumeSession   bool // session/resume offered
	Image           bool // promptCapabilities.image: the prompt may hold images
	AuthMethods     []AuthMethod
	Raw             json.RawMessage // the whole answer
}

type initializeResult struct {
	ProtocolVersion   int `json:"protocolVersion"`
	AgentCapabilities struct {
		LoadSession         bool `json:"loadSession"`
		SessionCapabilities struct {
			Resume json.RawMessage `json:"resume"`
		} `json:"sessionCapabilities"`
		PromptCapabilities struct {
			Image bool `json:"image"`
		} `json:"promptCapabilities"`
	} `json:"agentCapabilities"`
	AuthMethods []json.RawMessage `json:"authMethods"`
	AgentInfo   *implementation   `json:"agentInfo"`
}

type newSessionParams struct {
	Cwd        string      `json:"cwd"`
	McpServers []MCPServer `json:"mcpServers"`
}

type loadSessionParams struct {
	SessionID  string      `json:"sessionId"`
	Cwd        string      `json:"cwd"`
	McpServers []MCPServer `json:"mcpServers"`
}

// MCPServer is an MCP server offered to the agent in session/new (and
// session/load, session/resume): a command the agent starts itself and
// speaks MCP to on its stdio, so it runs wherever the agent runs, inside
// the task's sandbox. ACP's stdio transport, which every agent supports.
type MCPServer struct {
	Name    string     `json:"name"`
	Command string     `json:"command"`
	Args    []string   `json:"args"`
	Env     []EnvEntry `json:"env"`
}

// EnvEntry is one variable of an MCP server's environment.
type EnvEntry struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type newSessionResult struct {
	SessionID string `json:"sessionId"`
}

type contentBlock struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
	Data     string `json:"data,omitempty"` // an image's bytes, base64
}

// Image is a PNG sent with a prompt to an agent that takes images. Name
// says in the prompt's text what it shows.
type Image struct {
	Name string
	PNG  []byte
}

// MaxImages is the most images one prompt carries.
const MaxImages = 3

type promptParams struct {
	SessionID string         `json:"sessionId"`
	Prompt    []contentBlock `json:"prompt"`
}

// PromptResult is how a turn ended.
type PromptResult struct {
	StopReason string          `json:"stopReason"` // end_turn, max_tokens, max_turn_requests, refusal, cancelled
	Usage      json.RawMessage `json:"usage,omitempty"`
	// Meta is the answer's _meta: Gemini CLI reports its usage there
	// (quota.token_count), not in usage.
	Meta json.RawMessage `json:"_meta,omitempty"`
}

type cancelParams struct {
	SessionID string `json:"sessionId"`
}

type sessionNotification struct {
	SessionID string          `json:"sessionId"`
	Update    json.RawMessage `json:"update"`
}

// toolCallFields are the parts of tool_call and tool_call_update Kule reads.
// Pointers tell "absent" from "empty": an update changes only what it sends.
type toolCallFields struct {
	SessionUpdate string          `json:"sessionUpdate"`
	ToolCallID    string          `json:"toolCallId"`
	Title         *string         `json:"title"`
	Kind          *string         `json:"kind"`
	Status        *string         `json:"status"`
	Locations     []location      `json:"locations"`
	RawInput      json.RawMessage `json:"rawInput"`
	Content       []toolContent   `json:"content"`
}

type location struct {
	Path string `json:"path"`
	Line *int   `json:"line,omitempty"`
}

type toolContent struct {
	Type       string `json:"type"` // content, diff, terminal
	Path       string `json:"path,omitempty"`
	TerminalID string `json:"terminalId,omitempty"`
}

type chunkFields struct {
	Content struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

// PermissionOption is one answer the agent offers to a permission question.
type PermissionOption struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"` // allow_once, allow_always, reject_once, reject_always
}

type permissionParams struct {
	SessionID string             `json:"sessionId"`
	ToolCall  json.RawMessage    `json:"toolCall"`
	Options   []PermissionOption `json:"options"`
}

type permissionOutcome struct {
	Outcome  string `json:"outcome"` // selected or cancelled
	OptionID string `json:"optionId,omitempty"`
}

type permissionResult struct {
	Outcome permissionOutcome `json:"outcome"`
}

type readFileParams struct {
	SessionID string `json:"sessionId"`
	Path      string `json:"path"`
	Line      *int   `json:"line"`
	Limit     *int   `json:"limit"`
}

type readFileResult struct {
	Content string `json:"content"`
}

type writeFileParams struct {
	SessionID string `json:"sessionId"`
	Path      string `json:"path"`
	Content   string `json:"content"`
}

type envVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type createTerminalParams struct {
	SessionID       string   `json:"sessionId"`
	Command         string   `json:"command"`
	Args            []string `json:"args"`
	Env             []envVar `json:"env"`
	Cwd             *string  `json:"cwd"`
	OutputByteLimit *int64   `json:"outputByteLimit"`
}

type terminalParams struct {
	SessionID  string `json:"sessionId"`
	TerminalID string `json:"terminalId"`
}

type exitStatus struct {
	ExitCode *int    `json:"exitCode"`
	Signal   *string `json:"signal"`
}

type terminalOutputResult struct {
	Output     string      `json:"output"`
	Truncated  bool        `json:"truncated"`
	ExitStatus *exitStatus `json:"exitStatus,omitempty"`
}
