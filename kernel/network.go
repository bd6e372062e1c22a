package kernel

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/kulehq/kule/kernel/internal/config"
	"github.com/kulehq/kule/kernel/internal/group"
	"github.com/kulehq/kule/kernel/internal/policy"
	"github.com/kulehq/kule/kernel/internal/proxy"
	"github.com/kulehq/kule/kernel/internal/runner"
	"github.com/kulehq/kule/kernel/internal/secrets"
	"github.com/kulehq/kule/kernel/internal/task"
)

// TaskInfo is what the policy knows of a task.
func TaskInfo(t *task.Task) policy.TaskInfo {
	_, err := os.Lstat(filepath.Join(t.Folder, ".git"))
	return policy.TaskInfo{ID: t.ID, Group: t.Group, FolderIsGit: err == nil}
}

// NetHooks let the daemon take part in a run's connections. Both are
// optional; the CLI sets neither.
type NetHooks struct {
	// Ask is called for a connection the policy puts to a person (verdict
	// ask); the connection is held until it returns, and made only if it
	// returns true. Nil refuses at once.
	Ask func(ctx context.Context, t *task.Task, host string, port int, rule string) bool
	// Seen is told of every connection judged: verdict is "pass", "ask"
	// (answered: allowed says how) or "deny".
	Seen func(t *task.Task, host string, port int, verdict, rule string, allowed bool)
}

// LoadPolicyFor reads the policy that holds for a task: its group's, or the
// home's for its folder.
func (k *Kernel) LoadPolicyFor(t *task.Task) (*policy.Engine, error) {
	cfg, err := config.Load(k.store.Root)
	if err != nil {
		return nil, err
	}
	return group.Open(k.store.Root).LoadPolicy(t.Group, t.Folder, cfg.Policy.Choice)
}

// LoadPolicy reads the policy that holds for a task's folder.
func (k *Kernel) LoadPolicy(folder string) (*policy.Engine, error) {
	cfg, err := config.Load(k.store.Root)
	if err != nil {
		return nil, err
	}
	return policy.Load(k.store.Root, folder, cfg.Policy.Choice)
}

// ProxyOptions are what one run adds to the task's proxy.
type ProxyOptions struct {
	// Sandboxed says whether commands see the task's tmp at /tmp.
	Sandboxed bool
	// Agent is the profile of the agent that runs, "" for none; AgentHosts
	// are its profile's hosts, which the policy lets pass while it runs.
	Agent      string
	AgentHosts []string
	// Endpoints are host:port the person named for this run (an agent
	// profile's hosts with a port, kule exec --allow-host): the proxy may
	// dial them on loopback or a private network. AllowHosts are the ones
	// named on the command line: a connection the policy would put to a
	// person passes (a deny stays a deny).
	Endpoints  []string
	AllowHosts []string
	// Secrets are put into requests to their hosts only, beside the
	// person's stored secrets (one of the same name is replaced).
	Secrets []proxy.Secret
	// Configure, when set, may change the proxy's config before it starts
	// (tests point its upstream at a stand-in for a vendor's API).
	Configure func(*proxy.Config)
	// record, when set, is the kule exec run the proxy serves: what its
	// connections earn for their hosts is kept in it (memExecEnd), since
	// the run is not in the memory's database while it runs.
	record *execRecord
}

// StartProxy starts the task's proxy for one run: every connection judged by
// the policy (net.connect) and logged in network.jsonl, the person's secrets
// put into requests to their hosts only, publishing to registries refused.
func (k *Kernel) StartProxy(ctx context.Context, t *task.Task, o ProxyOptions) (*proxy.Proxy, error) {
	p, ready, err := k.startProxy(ctx, t, o)
	if err != nil {
		return nil, err
	}
	if err := ready(); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// startProxy starts the proxy; ready loads the policy (unless it is the
// built-ins alone, see builtinPolicyOnly) and makes the proxy's run
// authority, side by side, and returns their error. A connection's
// decision waits for the policy too, and one made without a policy is
// refused. Both are made when ready is called, not at once: a sandboxed run
// calls it once the sandbox's helper is forked, because their page faults
// and the fork take the same lock on kule's memory (made beside the fork,
// they made it 1.2–1.8 ms slower), while a run without the sandbox calls it
// before its command.
func (k *Kernel) startProxy(ctx context.Context, t *task.Task, o ProxyOptions) (*proxy.Proxy, func() error, error) {
	ready := sync.OnceValues(func() (*policy.Engine, error) {
		eng, err := k.LoadPolicyFor(t)
		if err != nil {
			return nil, err
		}
		return k.trustGate(t, eng), nil
	})
	p, err := k.startProxyWith(ctx, t, o, ready)
	if err != nil {
		return nil, nil, err
	}
	return p, func() error {
		// The two are independent: one core each.
		authority := make(chan error, 1)
		go func() { authority <- p.Ready() }()
		var err error
		if !k.builtinPolicyOnly(t) {
			// A file of the person's may be broken: find out before
			// anything runs.
			_, err = ready()
		}
		if perr := <-authority; err == nil {
			err = perr
		}
		return err
	}, nil
}

// builtinPolicyOnly reports whether t's policy is Kule's built-in choice
// alone (see policy.BuiltinOnly): its load cannot fail, so the first
// connection loads it, and a run that connects nowhere never does (a
// third of a millisecond, and a core, while the sandbox sets up).
func (k *Kernel) builtinPolicyOnly(t *task.Task) bool {
	if t.Group != "" {
		return false
	}
	cfg, err := config.Load(k.store.Root)
	return err == nil && policy.BuiltinOnly(k.store.Root, t.Folder, cfg.Policy.Choice)
}

func (k *Kernel) startProxyWith(ctx context.Context, t *task.Task, o ProxyOptions, engine func() (*policy.Engine, error)) (*proxy.Proxy, error) {
	info := TaskInfo(t)
	if o.Agent != "" {
		info.Agent, info.AgentRunning, info.ModelHosts = o.Agent, true, o.AgentHosts
	}
	hooks := k.net
	seen := t.Paths.Tmp
	if o.Sandboxed {
		seen = "/tmp"
	}
	cfg := proxy.ForTask(t.Paths.Dir, t.Paths.Tmp, seen)
	named, allowed := hostPortSet(o.Endpoints), hostPortSet(o.AllowHosts)
	remembered := &subjectsSeen{record: o.record}
	cfg.Decide = func(pctx context.Context, host string, port int) proxy.Decision {
		hp := policy.HostKey(host, port)
		eng, err := engine()
		if err != nil {
			return proxy.Decision{Reason: "the policy could not be read: " + err.Error()}
		}
		r := eng.Judge(info, []policy.Request{policy.NetRequest(host, port)})
		if len(r.Verdicts) == 0 {
			return proxy.Decision{Reason: "no verdict"}
		}
		v := r.Verdicts[0]
		d := proxy.Decision{Allow: v.Outcome == policy.Pass}
		if len(v.Rules) > 0 {
			d.Rule = v.Rules[0]
		}
		switch v.Outcome {
		case policy.Ask:
			d.Reason = "waits for approval"
			if allowed[hp] {
				d.Allow, d.Reason = true, "named with --allow-host"
			} else if hooks.Ask != nil {
				// Held until a person answers or the task's wait runs out.
				if d.Allow = hooks.Ask(pctx, t, host, port, d.Rule); d.Allow {
					d.Reason = "approved by a person"
				} else {
					d.Reason = "not approved by a person"
				}
			}
		case policy.Deny:
			d.Reason = "denied"
		}
		// Named: this exact host:port came from the person (see
		// proxy.Decision.Named): a remembered rule is one host:port, and
		// so is a question they answered.
		d.Named = d.Allow && (named[hp] || allowed[hp] || v.Reason == policy.RememberedReason || d.Reason == "approved by a person")
		// What asked, and whether the person let it, is evidence for this
		// one host's category (graduation).
		k.memConnection(t, remembered, host, port, v, v.Outcome == policy.Ask && d.Allow)
		if hooks.Seen != nil {
			word, _ := v.Outcome.MarshalText()
			hooks.Seen(t, host, port, string(word), d.Rule, d.Allow)
		}
		return d
	}
	for _, h := range policy.RegistryHosts() {
		cfg.Registries = append(cfg.Registries, proxy.Registry{Host: h})
	}
	own := map[string]bool{}
	for _, s := range o.Secrets {
		own[s.Name] = true
	}
	var leased []proxy.Secret
	release := func() {
		for _, s := range leased {
			s.Release()
		}
	}
	if store, err := secrets.Open(k.store.Root); err == nil {
		all, err := store.All()
		if err != nil {
			return nil, fmt.Errorf("secrets: %w (nothing ran)", err)
		}
		for _, s := range all {
			if hideTransportSecrets && config.IsTransportSecret(s.Name) {
				continue // a chat bot's token is the daemon's, never a task's
			}
			if own[s.Name] {
				continue
			}
			if s.Lease != nil {
				ps, err := k.leaseSecret(ctx, t, store, s)
				if err != nil {
					release()
					return nil, fmt.Errorf("%w (nothing ran)", err)
				}
				leased = append(leased, ps)
				cfg.Secrets = append(cfg.Secrets, ps)
				continue
			}
			cfg.Secrets = append(cfg.Secrets, proxy.Secret{Name: s.Name, Value: s.Value, Hosts: s.Hosts})
		}
	}
	cfg.Secrets = append(cfg.Secrets, o.Secrets...)
	if o.Configure != nil {
		o.Configure(&cfg)
	}
	p, err := proxy.Begin(ctx, cfg)
	if err != nil {
		release()
	}
	return p, err
}

// hostPortSet is a set of host:port in the form the decider compares
// (policy.HostKey of the cleaned host); entries without a port are left out.
func hostPortSet(list []string) map[string]bool {
	out := map[string]bool{}
	for _, hp := range list {
		if h, p, err := policy.SplitHostPort(hp); err == nil {
			out[policy.HostKey(h, p)] = true
		}
	}
	return out
}

// hideTransportSecrets keeps the chat transports' tokens out of every
// task's proxy: with them in, a task's command holding the placeholder
// could have the proxy send the bot's token to the chat service and post,
// or read the channel, as the bot. Tests turn it off to show what it guards.
var hideTransportSecrets = true

// withProxy starts the proxy when the run's network goes through it, and
// fills the spec from it. The returned stop closes it and says, one line a
// host, where the run connected.
func (k *Kernel) withProxy(ctx context.Context, t *task.Task, spec *runner.Spec, allowHosts []string, rec *execRecord) (func() []string, error) {
	if spec.Network != runner.NetworkProxy {
		return func() []string { return nil }, nil
	}
	_, direct := k.runner.(runner.Direct)
	for _, hp := range allowHosts {
		if _, _, err := policy.SplitHostPort(hp); err != nil {
			return nil, fmt.Errorf("exec: --allow-host: %w (nothing ran)", err)
		}
	}
	p, ready, err := k.startProxy(ctx, t, ProxyOptions{Sandboxed: !direct, Endpoints: allowHosts, AllowHosts: allowHosts, record: rec})
	if err != nil {
		return nil, fmt.Errorf("exec: start the task's proxy: %w (nothing ran)", err)
	}
	// The policy loads and the CA bundle is written (at Ready, once the
	// sandbox's helper is forked) while the sandbox sets up; the command
	// starts only once both are done.
	before := spec.Ready
	spec.Ready = func() error {
		if err := ready(); err != nil {
			return fmt.Errorf("exec: start the task's proxy: %w (nothing ran)", err)
		}
		if before != nil {
			return before()
		}
		return nil
	}
	spec.ProxyAddr = p.Addr()
	spec.ProxyServe = p.Serve // the proxy runs here: a sandbox hands it each connection
	spec.ProxyToken = p.Token()
	spec.TaskEnv = append(spec.TaskEnv, p.CAEnv()...)
	spec.TaskEnv = append(spec.TaskEnv, p.SecretEnv()...)
	if direct {
		// Without a sandbox nothing forces the command through the proxy;
		// the variables make well-behaved tools use it.
		spec.TaskEnv = append(spec.TaskEnv, proxy.ProxyEnv(p.Addr(), p.Token())...)
	}
	return func() []string {
		_ = p.Close()
		return p.Summary()
	}, nil
}
