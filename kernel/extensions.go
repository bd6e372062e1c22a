package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/kulehq/kule/kernel/internal/acp"
	"github.com/kulehq/kule/kernel/internal/beneath"
	"github.com/kulehq/kule/kernel/internal/extensions"
	"github.com/kulehq/kule/sdk/extension"
)

// maxExtensionRead is the most bytes files.read hands an extension.
const maxExtensionRead = 1 << 20

// ExtensionServices answer an approved extension's calls into Kule, after
// kernel/internal/extensions checked them against its permissions. They
// read only: tasks through the store, a task's effects through Status,
// a task's files beneath its copy (never through a link, never the real
// folder or Kule's home). notify carries a notice to the person (nil: the
// notice is dropped).
func (k *Kernel) ExtensionServices(notify func(ext, text string)) extensions.Services {
	return extServices{k: k, notify: notify}
}

type extServices struct {
	k      *Kernel
	notify func(ext, text string)
}

// extTask is what an extension sees of a task.
type extTask struct {
	ID      string `json:"id"`
	Name    string `json:"name,omitempty"`
	Folder  string `json:"folder"`
	Created string `json:"created"`
	Group   string `json:"group,omitempty"`
}

func toExtTask(t *Task) extTask {
	return extTask{ID: t.ID, Name: t.Name, Folder: t.Folder, Created: t.Created.UTC().Format("2006-01-02T15:04:05Z"), Group: t.Group}
}

func (s extServices) Call(ctx context.Context, m *extension.Manifest, method string, raw json.RawMessage) (json.RawMessage, error) {
	var args []json.RawMessage
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &args); err != nil {
			return nil, fmt.Errorf("%s: arguments are not a JSON list", method)
		}
	}
	str := func(i int) (string, error) {
		var v string
		if i >= len(args) || json.Unmarshal(args[i], &v) != nil {
			return "", fmt.Errorf("%s: argument %d must be a string", method, i+1)
		}
		return v, nil
	}
	task := func() (*Task, error) {
		id, err := str(0)
		if err != nil {
			return nil, err
		}
		return s.k.Resolve(id)
	}
	switch method {
	case "tasks.list":
		ts, err := s.k.Tasks()
		if err != nil {
			return nil, err
		}
		out := []extTask{}
		for _, t := range ts {
			out = append(out, toExtTask(t))
		}
		return json.Marshal(out)
	case "tasks.get":
		t, err := task()
		if err != nil {
			return nil, err
		}
		return json.Marshal(toExtTask(t))
	case "review.effects":
		t, err := task()
		if err != nil {
			return nil, err
		}
		st, err := s.k.Status(ctx, t)
		if err != nil {
			return nil, err
		}
		return json.Marshal(ExtensionReviewOf(st, nil))
	case "files.read":
		t, err := task()
		if err != nil {
			return nil, err
		}
		rel, err := str(1)
		if err != nil {
			return nil, err
		}
		root, err := beneath.Open(t.Paths.Copy)
		if err != nil {
			return nil, err
		}
		defer root.Close()
		f, err := root.Open(rel)
		if err != nil {
			return nil, fmt.Errorf("files.read %s: %w", rel, err)
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, maxExtensionRead+1))
		if err != nil {
			return nil, fmt.Errorf("files.read %s: %w", rel, err)
		}
		if len(b) > maxExtensionRead {
			return nil, fmt.Errorf("files.read %s: larger than %d bytes", rel, maxExtensionRead)
		}
		if !utf8.Valid(b) {
			return nil, fmt.Errorf("files.read %s: not text", rel)
		}
		return json.Marshal(string(b))
	case "notify":
		text, err := str(0)
		if err != nil {
			return nil, err
		}
		if len(text) > 300 {
			text = text[:300]
		}
		if s.notify != nil {
			s.notify(m.ID, text)
		}
		return json.RawMessage("true"), nil
	}
	return nil, errors.New(method + ": not offered")
}

// ExtensionMCPServers are the MCP servers an agent's session is offered:
// those of approved, enabled extensions, each with its own approval (kule
// ext approve ID --mcp NAME). The agent starts each itself, so it runs
// inside the task's sandbox with the agent's openings and no more. Why a
// server was left out goes to note (nil: dropped).
func (k *Kernel) ExtensionMCPServers(note func(string)) []acp.MCPServer {
	offered, waiting, err := extensions.New(k.Store().Root).OfferedMCP()
	if note != nil {
		if err != nil {
			note("extensions: " + err.Error() + "; no extension's MCP server was offered")
		}
		for _, w := range waiting {
			note(w)
		}
	}
	out := []acp.MCPServer{}
	for _, m := range offered {
		if len(m.Command) == 0 {
			continue
		}
		out = append(out, acp.MCPServer{Name: m.Name, Command: m.Command[0], Args: append([]string{}, m.Command[1:]...)})
	}
	return out
}

// ExtensionReviewOf is what a review-notes hook sees of st: the task and
// its effects, each with the entities named in it (names may be nil).
func ExtensionReviewOf(st *Status, names map[string][]string) extensions.Review {
	rv := extensions.Review{Task: st.Task.ID, Name: st.Task.Name, Effects: []extensions.ReviewEffect{}}
	for _, e := range st.Effects {
		rv.Effects = append(rv.Effects, extensions.ReviewEffect{Path: e.Path, Kind: string(e.Kind), From: e.From, Entities: names[e.Path]})
	}
	return rv
}

// EntityNames maps each file of names to the entities named in it
// ("func Serve"), for a review-notes hook.
func EntityNames(n Names) map[string][]string {
	out := map[string][]string{}
	for _, f := range n.Files {
		for _, e := range f.Entities {
			id := e.Name
			if e.Kind != "" {
				id = e.Kind + " " + e.Name
			}
			out[f.Path] = append(out[f.Path], id)
		}
	}
	return out
}
