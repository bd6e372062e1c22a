package extensions

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/kulehq/kule/sdk/extension"
)

// Services answer an extension's calls into Kule once Allowed passed them:
// tasks.list, tasks.get, review.effects, files.read, notify. The kernel's
// implementation reads tasks through the task store and files beneath a
// task's copy.
type Services interface {
	Call(ctx context.Context, m *extension.Manifest, method string, args json.RawMessage) (json.RawMessage, error)
}

// Launcher starts one extension host process and returns its client and
// how to end it. Kule's launcher starts `kule-plugins __plugin extension/host` in
// the plugin sandbox (pluginhost.StartBuiltin).
type Launcher func(ctx context.Context) (*extension.HostClient, func(), error)

// Limits of one extension's runtime.
type Limits struct {
	// CallTimeout bounds each call (load, command, hook); 2s.
	CallTimeout time.Duration
	// Memory is the runtime's heap ceiling; 256 MiB.
	Memory int64
}

// Runner starts approved extensions, each in a host process of its own, so
// the kernel knows which extension every bridge call comes from without
// taking the host's word for it.
type Runner struct {
	Store    *Store
	Launch   Launcher
	Services Services
	Limits   Limits
}

// Running is one loaded extension in its host.
type Running struct {
	Manifest   *extension.Manifest
	SHA256     string
	Registered []string
	// HeapBytes is the host's heap after the load.
	HeapBytes int64

	services Services
	sess     *extension.Session
	kill     func()

	mu     sync.Mutex
	denied []string
}

// Start loads the approved extension id into a fresh host. The package
// handed to the host is the one whose bytes matched the approval.
func (r *Runner) Start(ctx context.Context, id string) (*Running, error) {
	pkg, err := r.Store.Load(id)
	if err != nil {
		return nil, err
	}
	return r.start(ctx, pkg)
}

func (r *Runner) start(ctx context.Context, pkg *extension.Package) (*Running, error) {
	if r.Launch == nil {
		return nil, fmt.Errorf("ext %s: no extension host can be started here; nothing of it ran", pkg.Manifest.ID)
	}
	client, kill, err := r.Launch(ctx)
	if err != nil {
		return nil, fmt.Errorf("ext %s: the extension host did not start: %w; nothing of it ran", pkg.Manifest.ID, err)
	}
	return r.load(ctx, pkg, client, kill)
}

// load loads pkg into a host that was started and has run nothing yet;
// from then on the host is pkg's alone.
func (r *Runner) load(ctx context.Context, pkg *extension.Package, client *extension.HostClient, kill func()) (*Running, error) {
	var err error
	x := &Running{Manifest: pkg.Manifest, SHA256: pkg.SHA256, services: r.Services, kill: kill}
	x.sess, err = client.Open(context.WithoutCancel(ctx), x.bridge)
	if err != nil {
		kill()
		return nil, fmt.Errorf("ext %s: %w", pkg.Manifest.ID, err)
	}
	scripts := map[string][]byte{}
	for name, b := range pkg.Files {
		if strings.HasSuffix(name, ".js") {
			scripts[name] = b
		}
	}
	settings, err := r.Store.settingsOf(pkg.Manifest)
	if err != nil {
		x.Close()
		return nil, err
	}
	lim := r.Limits
	if lim.CallTimeout <= 0 {
		lim.CallTimeout = 2 * time.Second
	}
	if lim.Memory <= 0 {
		lim.Memory = 256 << 20
	}
	res, err := x.sess.Load(ctx, extension.LoadRequest{Extension: pkg.Manifest.ID, Version: pkg.Manifest.Version, Files: scripts,
		Main: pkg.Manifest.Main, Settings: settings, CallTimeoutMS: lim.CallTimeout.Milliseconds(), MemoryLimitBytes: lim.Memory})
	if err != nil {
		x.Close()
		return nil, fmt.Errorf("ext %s: its main script failed: %w", pkg.Manifest.ID, err)
	}
	x.Registered, x.HeapBytes = res.Registered, res.HeapBytes
	return x, nil
}

// bridge is every call the extension makes into Kule: checked against the
// approved manifest first, then answered by the services.
func (x *Running) bridge(ctx context.Context, method string, args json.RawMessage) (json.RawMessage, error) {
	if err := Allowed(x.Manifest, method); err != nil {
		x.mu.Lock()
		x.denied = append(x.denied, method)
		x.mu.Unlock()
		return nil, err
	}
	if x.services == nil {
		return nil, fmt.Errorf("%w: %s: no services here", ErrDenied, method)
	}
	return x.services.Call(ctx, x.Manifest, method, args)
}

// Denied are the calls refused so far, in order.
func (x *Running) Denied() []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]string(nil), x.denied...)
}

// Close ends the extension's host.
func (x *Running) Close() {
	if x.sess != nil {
		x.sess.Close()
	}
	x.kill()
}

// Run runs the command id of the extension with args (JSON; nil for none)
// and returns its JSON value. The command must be in the approved manifest.
func (x *Running) Run(ctx context.Context, command string, args json.RawMessage) (json.RawMessage, error) {
	if _, ok := x.Manifest.Command(command); !ok {
		var ids []string
		for _, c := range x.Manifest.Commands {
			ids = append(ids, x.Manifest.ID+"."+c.ID)
		}
		return nil, fmt.Errorf("%w: %s has no command %q in its manifest (it has: %s)", ErrNotInstalled, x.Manifest.ID, command, strings.Join(ids, ", "))
	}
	res, err := x.sess.Invoke(ctx, extension.InvokeRequest{Extension: x.Manifest.ID, Kind: "command", Name: command, Args: args})
	if err != nil {
		return nil, fmt.Errorf("ext %s.%s: %w", x.Manifest.ID, command, err)
	}
	return res.Value, nil
}

// Review is what a review-notes hook sees: a task and its effects.
type Review struct {
	Task    string         `json:"task"`
	Name    string         `json:"name,omitempty"`
	Effects []ReviewEffect `json:"effects"`
}

// ReviewEffect is one effect of a review, with the entities named in it.
type ReviewEffect struct {
	Path     string   `json:"path"`
	Kind     string   `json:"kind"`
	From     string   `json:"from,omitempty"`
	Entities []string `json:"entities,omitempty"`
}

// Note is a note an extension adds under a file (or an entity in it) of a
// review.
type Note struct {
	Extension string `json:"extension"`
	Path      string `json:"path"`
	Entity    string `json:"entity,omitempty"`
	Text      string `json:"text"`
}

// Caps on what a hook may add.
const (
	MaxNotes    = 200
	MaxNoteText = 300
)

// ReviewNotes calls the extension's review-notes hook. Its notes are kept
// only where they name a path of the review, with printable text of at most
// MaxNoteText characters, at most MaxNotes in all; the rest are dropped and
// counted.
func (x *Running) ReviewNotes(ctx context.Context, rv Review) (notes []Note, dropped int, err error) {
	if !x.Manifest.ReviewNotes {
		return nil, 0, nil
	}
	if err := Allowed(x.Manifest, "review.effects"); err != nil {
		return nil, 0, err
	}
	if !x.Manifest.Has(extension.PermReviewNotes) {
		return nil, 0, fmt.Errorf("%w: %s has no %q permission", ErrDenied, x.Manifest.ID, extension.PermReviewNotes)
	}
	arg, err := json.Marshal(rv)
	if err != nil {
		return nil, 0, err
	}
	res, err := x.sess.Invoke(ctx, extension.InvokeRequest{Extension: x.Manifest.ID, Kind: "review.notes", Args: arg})
	if err != nil {
		return nil, 0, fmt.Errorf("ext %s: review notes: %w", x.Manifest.ID, err)
	}
	var raw []struct {
		Path   string `json:"path"`
		Entity string `json:"entity"`
		Text   string `json:"text"`
	}
	if len(res.Value) > 0 && string(res.Value) != "null" {
		if err := json.Unmarshal(res.Value, &raw); err != nil {
			return nil, 0, fmt.Errorf("ext %s: review notes: the hook returned %s, not a list of {path, entity, text}", x.Manifest.ID, clip(string(res.Value), 80))
		}
	}
	paths := map[string]bool{}
	for _, e := range rv.Effects {
		paths[e.Path] = true
	}
	for _, n := range raw {
		text := strings.TrimSpace(n.Text)
		if !paths[n.Path] || text == "" || utf8.RuneCountInString(text) > MaxNoteText || !printableNote(text) || len(n.Entity) > 200 || !printableNote(n.Entity) || len(notes) >= MaxNotes {
			dropped++
			continue
		}
		notes = append(notes, Note{Extension: x.Manifest.ID, Path: n.Path, Entity: n.Entity, Text: text})
	}
	sort.SliceStable(notes, func(i, j int) bool { return notes[i].Path < notes[j].Path })
	return notes, dropped, nil
}

func printableNote(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || (r >= '\u202a' && r <= '\u202e') || (r >= '\u2066' && r <= '\u2069') {
			return false
		}
	}
	return true
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
