package policy

import (
	"slices"

	"github.com/cedar-policy/cedar-go/types"
)

// Entity types and the action type, as the schema names them.
const (
	TaskType   types.EntityType = "Kule::Task"
	PathType   types.EntityType = "Kule::Path"
	HostType   types.EntityType = "Kule::Host"
	ActionType types.EntityType = "Kule::Action"
)

// TaskInfo is what the policy knows of the task whose requests it judges.
type TaskInfo struct {
	ID           string
	Agent        string // the agent that runs (or ran) in the task, "" for none
	Group        string
	FolderIsGit  bool
	AgentRunning bool // the agent is running now (for connections)
	// ModelHosts are the model API hosts of Agent as its profile names them,
	// beside those the built-in host list knows.
	ModelHosts []string
	// Deleted counts the files the task's earlier commits deleted or
	// truncated since the count last started over; a batch's deletions
	// (context.deletions) add up with them.
	Deleted int
}

// builder makes the entities of one batch of requests. It caches the tag
// sets, which repeat, and the principal and context, which do not change
// within a batch.
type builder struct {
	task      TaskInfo
	principal types.Entity
	context   types.Record
	tagSets   map[tagMask]types.Set
	modelHost map[string]bool
}

func newBuilder(task TaskInfo, deletions int) *builder {
	b := &builder{task: task, tagSets: map[tagMask]types.Set{}}
	b.principal = types.Entity{
		UID: types.NewEntityUID(TaskType, types.String(task.ID)),
		Attributes: types.NewRecord(types.RecordMap{
			"agent":         types.String(task.Agent),
			"group":         types.String(task.Group),
			"folder_is_git": types.Boolean(task.FolderIsGit),
		}),
	}
	b.context = types.NewRecord(types.RecordMap{
		"deletions":     types.Long(deletions),
		"folder_is_git": types.Boolean(task.FolderIsGit),
		"agent_running": types.Boolean(task.AgentRunning),
		"git_change":    types.String(""),
		"truncates":     types.False,
	})
	if len(task.ModelHosts) > 0 {
		b.modelHost = map[string]bool{}
		for _, h := range task.ModelHosts {
			if host, port, err := SplitHostPort(h); err == nil {
				b.modelHost[hostKey(host, port)] = true // an endpoint, [::1]:8080 as ::1:8080
				continue
			}
			b.modelHost[cleanHost(h)] = true
		}
	}
	return b
}

func (b *builder) tagSet(m tagMask) types.Set {
	if s, ok := b.tagSets[m]; ok {
		return s
	}
	names := m.Names()
	vs := make([]types.Value, len(names))
	for i, n := range names {
		vs[i] = types.String(n)
	}
	s := types.NewSet(vs...)
	b.tagSets[m] = s
	return s
}

// resource builds the resource entity of a request and says what it is.
func (b *builder) resource(r Request) (types.Entity, tagMask) {
	if r.Action == NetConnect {
		return b.host(r)
	}
	info := classifyPath(r.Path)
	tags := info.tags
	if r.From != "" {
		// A move away from a manifest changes the manifest as much as a
		// move onto one.
		tags |= classifyPath(r.From).tags
	}
	tags |= r.inner
	if r.Link {
		tags |= bLink
	}
	if r.NestedRepo {
		tags |= bNestedRepo
	}
	return types.Entity{
		UID: types.NewEntityUID(PathType, types.String(info.clean)),
		Attributes: types.NewRecord(types.RecordMap{
			"name":  types.String(info.name),
			"ext":   types.String(info.ext),
			"dir":   types.String(info.dir),
			"depth": types.Long(info.depth),
			"tags":  b.tagSet(tags),
		}),
	}, tags
}

func (b *builder) host(r Request) (types.Entity, tagMask) {
	h := cleanHost(r.Host)
	known := knownHosts[h]
	tags := known.tags
	agents := known.agents
	// A profile names a model host by name (any port) or a local
	// endpoint by host:port (that port only).
	if (b.modelHost[h] || b.modelHost[hostKey(h, r.Port)]) && b.task.Agent != "" {
		tags |= bModelAPI
		agents = append(slices.Clip(agents), b.task.Agent)
	}
	vs := make([]types.Value, len(agents))
	for i, a := range agents {
		vs[i] = types.String(a)
	}
	return types.Entity{
		UID: types.NewEntityUID(HostType, types.String(hostKey(h, r.Port))),
		Attributes: types.NewRecord(types.RecordMap{
			"host":          types.String(h),
			"port":          types.Long(r.Port),
			"tags":          b.tagSet(tags),
			"model_api_for": types.NewSet(vs...),
		}),
	}, tags
}

// request builds the Cedar request and the entities it reads.
func (b *builder) request(r Request) (types.Request, pairGetter, tagMask) {
	res, tags := b.resource(r)
	ctx := b.context
	if r.GitChange != "" || r.Truncates {
		m := map[types.String]types.Value{}
		for k, v := range b.context.All() {
			m[k] = v
		}
		m["git_change"] = types.String(r.GitChange)
		m["truncates"] = types.Boolean(r.Truncates)
		ctx = types.NewRecord(m)
	}
	return types.Request{
		Principal: b.principal.UID,
		Action:    types.NewEntityUID(ActionType, types.String(r.Action)),
		Resource:  res.UID,
		Context:   ctx,
	}, pairGetter{b.principal, res}, tags
}

// pairGetter serves the two entities of one request without building a map.
type pairGetter struct{ principal, resource types.Entity }

func (g pairGetter) Get(uid types.EntityUID) (types.Entity, bool) {
	switch uid {
	case g.principal.UID:
		return g.principal, true
	case g.resource.UID:
		return g.resource, true
	}
	return types.Entity{}, false
}
