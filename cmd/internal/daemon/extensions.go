package daemon

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"

	"github.com/kulehq/kule/kernel"
)

// The daemon's side of extensions: the app's Settings → Extensions lists
// each installed extension with its permissions in words, its approval and
// its settings (which the person changes there: PUT
// /api/extensions/{id}/settings, typed by the manifest), the palette runs
// approved extensions' commands, and a task's review carries the notes of
// extensions with a review-notes hook under each file. An extension runs in
// a host of its own in the plugin sandbox (Config's Extensions); the daemon
// keeps those hosts running (kernel.ExtensionPool: one loaded host per
// extension, one spare started ahead), so a command or a review pays the
// call, not a host's start.

// extensionView is one installed extension as the app shows it.
type extensionView struct {
	ID          string           `json:"id"`
	Name        string           `json:"name"`
	Version     string           `json:"version"`
	Description string           `json:"description,omitempty"`
	SHA256      string           `json:"sha256"`
	Approved    bool             `json:"approved"`
	Reason      string           `json:"reason,omitempty"`
	Disabled    bool             `json:"disabled,omitempty"`
	Permissions []permissionView `json:"permissions"`
	Commands    []commandView    `json:"commands"`
	Settings    []settingView    `json:"settings"`
	Themes      []themeView      `json:"themes"`
	Panels      []panelView      `json:"panels"`
	ReviewNotes bool             `json:"review_notes,omitempty"`
}

type permissionView struct {
	Name string `json:"name"`
	Says string `json:"says"`
}

type commandView struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

// themeView is a theme; Usable when it may be applied (approved, enabled).
type themeView struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	Usable bool   `json:"usable,omitempty"`
}

// panelView is a panel; URL is set when it may be shown (approved,
// enabled).
type panelView struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	URL   string `json:"url,omitempty"`
}

type settingView struct {
	ID      string `json:"id"`
	Title   string `json:"title"`
	Type    string `json:"type"`
	Default any    `json:"default,omitempty"`
	// Value is what the extension reads now: the person's value, or the
	// default.
	Value any `json:"value,omitempty"`
}

// noteView is one extension's note under a file of a review; Entity, when
// set, is the entity of that file it is about.
type noteView struct {
	Extension string `json:"extension"`
	Entity    string `json:"entity,omitempty"`
	Text      string `json:"text"`
}

// extPool is the daemon's pool of extension hosts, nil when extensions
// cannot run here. Making it starts a spare host in the background.
func (d *Daemon) extPool() *kernel.ExtensionPool {
	if d.cfg.Extensions == nil {
		return nil
	}
	d.extOnce.Do(func() {
		select {
		case <-d.done:
			return // shutting down: no hosts are started
		default:
		}
		d.extP = &kernel.ExtensionPool{Runner: d.cfg.Extensions()}
		d.extP.Warm()
	})
	return d.extP
}

// attachNotes runs the review-notes hook of each approved, enabled
// extension that has one over st (in the pool's hosts) and puts each note
// under its file in cs. It returns what went wrong, for the app to show
// beside the review; a failing extension never fails the review.
func (d *Daemon) attachNotes(ctx context.Context, st *kernel.Status, cs []ChangeView) []string {
	if len(cs) == 0 {
		return []string{}
	}
	names := map[string][]string{}
	at := map[string]int{}
	for i, c := range cs {
		at[c.Path] = i
		if len(c.Names) > 0 {
			names[c.Path] = c.Names
		}
	}
	notes, warnings := d.reviewNotes(ctx, st, names)
	for _, n := range notes {
		if i, ok := at[n.Path]; ok {
			cs[i].Notes = append(cs[i].Notes, noteView{Extension: n.Extension, Entity: n.Entity, Text: n.Text})
		}
	}
	return warnings
}

// reviewNotes are the notes of every approved, enabled extension with a
// review-notes hook over st, each run in the host the pool keeps for it.
func (d *Daemon) reviewNotes(ctx context.Context, st *kernel.Status, names map[string][]string) ([]kernel.ExtensionNote, []string) {
	warnings := []string{}
	all := []kernel.ExtensionNote{}
	if d.cfg.Extensions == nil {
		return all, warnings
	}
	list, err := kernel.NewExtensionStore(d.home).List()
	if err != nil {
		return all, append(warnings, "extensions: "+err.Error())
	}
	var hooks []kernel.ExtensionStatus
	for _, e := range list {
		if e.Approved && !e.Disabled && e.Manifest.ReviewNotes {
			hooks = append(hooks, e)
		}
	}
	if len(hooks) == 0 {
		return all, warnings // no host is started for nothing
	}
	pool := d.extPool()
	if pool == nil {
		return all, warnings
	}
	for _, e := range hooks {
		var notes []kernel.ExtensionNote
		var dropped int
		_, err := pool.Use(ctx, e.Manifest.ID, func(x *kernel.RunningExtension) error {
			var err error
			notes, dropped, err = x.ReviewNotes(ctx, kernel.ExtensionReviewOf(st, names))
			return err
		})
		if err != nil {
			warnings = append(warnings, err.Error())
			continue
		}
		if dropped > 0 {
			warnings = append(warnings, fmt.Sprintf("%s: %d notes dropped (a path outside the review, or text too long or not printable)", e.Manifest.ID, dropped))
		}
		all = append(all, notes...)
	}
	return all, warnings
}

// taskNotes answers `kule status` when a daemon runs: the review notes of
// the task's effects now, from the hosts the daemon keeps, so the command
// pays the hooks and not a host's start each. The entities named in each
// file come with the request (the CLI found them already).
func (d *Daemon) taskNotes(w http.ResponseWriter, r *http.Request, t *kernel.Task) {
	var body struct {
		Names map[string][]string `json:"names"`
	}
	if err := readBody(r, &body); err != nil {
		fail(w, err)
		return
	}
	if d.cfg.Extensions == nil {
		writeJSON(w, http.StatusServiceUnavailable, apiError{Error: errExtensionsOff.Error()})
		return
	}
	st, err := d.k.Status(r.Context(), t)
	if err != nil {
		fail(w, err)
		return
	}
	notes, warnings := d.reviewNotes(r.Context(), st, body.Names)
	writeJSON(w, http.StatusOK, map[string]any{"notes": notes, "warnings": warnings})
}

// putExtensionSettings saves the person's values for an extension's
// settings, each checked against the type its manifest declares; the
// extension's running host is loaded afresh with them at its next use.
func (d *Daemon) putExtensionSettings(w http.ResponseWriter, r *http.Request) {
	var body map[string]json.RawMessage
	if err := readBody(r, &body); err != nil {
		fail(w, err)
		return
	}
	v, err := kernel.NewExtensionStore(d.home).SetSettings(r.PathValue("id"), body)
	if errors.Is(err, kernel.ErrExtensionDenied) {
		writeJSON(w, http.StatusUnprocessableEntity, apiError{Error: err.Error()})
		return
	}
	if err != nil {
		fail(w, err)
		return
	}
	d.log.Info("extension settings saved", "extension", r.PathValue("id"))
	writeJSON(w, http.StatusOK, map[string]json.RawMessage{"settings": v})
}

var errExtensionsOff = errors.New("extensions cannot run in this daemon")

func (d *Daemon) listExtensions(w http.ResponseWriter, r *http.Request) {
	list, err := kernel.NewExtensionStore(d.home).List()
	if err != nil {
		fail(w, err)
		return
	}
	out := []extensionView{}
	store := kernel.NewExtensionStore(d.home)
	for _, st := range list {
		m := st.Manifest
		values := map[string]any{}
		if raw, err := store.Settings(m.ID); err == nil {
			_ = json.Unmarshal(raw, &values)
		}
		v := extensionView{ID: m.ID, Name: m.Name, Version: m.Version, Description: m.Description, SHA256: st.SHA256,
			Approved: st.Approved, Reason: st.Reason, Disabled: st.Disabled, ReviewNotes: m.ReviewNotes,
			Permissions: []permissionView{}, Commands: []commandView{}, Settings: []settingView{}, Themes: []themeView{}, Panels: []panelView{}}
		for _, p := range m.Permissions {
			v.Permissions = append(v.Permissions, permissionView{Name: string(p), Says: p.Describe()})
		}
		for _, c := range m.Commands {
			v.Commands = append(v.Commands, commandView{ID: c.ID, Title: c.Title})
		}
		for _, s := range m.Settings {
			v.Settings = append(v.Settings, settingView{ID: s.ID, Title: s.Title, Type: s.Type, Default: s.Default, Value: values[s.ID]})
		}
		for _, t := range m.Themes {
			v.Themes = append(v.Themes, themeView{ID: t.ID, Title: t.Title, Usable: st.Approved && !st.Disabled})
		}
		for _, p := range m.Panels {
			pv := panelView{ID: p.ID, Title: p.Title}
			if st.Approved && !st.Disabled {
				pv.URL = d.panelBase(m.ID) + p.Page
			}
			v.Panels = append(v.Panels, pv)
		}
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, out)
}

// runExtensionCommand runs one command of an approved extension; its
// result is JSON. Unapproved, changed or disabled, it does not run.
func (d *Daemon) runExtensionCommand(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Args []string `json:"args"`
	}
	if err := readBody(r, &body); err != nil {
		fail(w, err)
		return
	}
	pool := d.extPool()
	if pool == nil {
		writeJSON(w, http.StatusServiceUnavailable, apiError{Error: errExtensionsOff.Error() + " (start it with kule daemon)"})
		return
	}
	if body.Args == nil {
		body.Args = []string{}
	}
	args, _ := json.Marshal(body.Args)
	id, command := r.PathValue("id"), r.PathValue("command")
	var v json.RawMessage
	ran := false
	denied, err := pool.Use(r.Context(), id, func(x *kernel.RunningExtension) error {
		ran = true
		var err error
		v, err = x.Run(r.Context(), command, args)
		return err
	})
	if errors.Is(err, kernel.ErrExtensionNotApproved) {
		writeJSON(w, http.StatusConflict, apiError{Error: err.Error()})
		return
	}
	if err != nil && !ran {
		fail(w, err)
		return
	}
	if err != nil {
		writeJSON(w, http.StatusUnprocessableEntity, apiError{Error: err.Error()})
		return
	}
	if len(v) == 0 {
		v = json.RawMessage("null")
	}
	if denied == nil {
		denied = []string{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"result": v, "denied": denied})
	d.log.Info("extension command ran", "extension", id, "command", command, "denied", fmt.Sprint(denied))
}

// Panels. An extension's panel page is served from
// /ext-panel/<key>/<id>/<file>, where key is an HMAC of the extension's id
// under this daemon's token: a capability for that one extension's files,
// needed because a sandboxed frame has an opaque origin and sends no
// cookie. The response carries a CSP of its own that sandboxes the page
// even if it is opened outside its frame (sandbox allow-scripts: no
// same-origin, no top navigation, no forms, no popups), lets it load
// scripts, styles and images from its own extension's folder only, and
// connect nowhere. The page reaches Kule only by postMessage to the app,
// whose bridge (web/extensions.js) knows which extension a frame belongs
// to by the frame it made, never by what a message says, and calls
// POST /api/extensions/{id}/call, where the kernel checks the approved
// permissions.

// panelTypes are the files a panel may load, by extension.
var panelTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
	".png":  "image/png",
}

func (d *Daemon) panelKey(id string) string {
	m := hmac.New(sha256.New, []byte(d.token))
	m.Write([]byte("kule extension panel\x00" + id))
	return hex.EncodeToString(m.Sum(nil))[:32]
}

// panelBase is the path under which extension id's panel files are served.
func (d *Daemon) panelBase(id string) string { return "/ext-panel/" + d.panelKey(id) + "/" + id + "/" }

func (d *Daemon) servePanelFile(w http.ResponseWriter, r *http.Request) {
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/ext-panel/"), "/", 3)
	notFound := func() { http.Error(w, "not found", http.StatusNotFound) }
	if r.Method != http.MethodGet || len(parts) != 3 {
		notFound()
		return
	}
	key, id, file := parts[0], parts[1], parts[2]
	if subtle.ConstantTimeCompare([]byte(key), []byte(d.panelKey(id))) != 1 {
		notFound()
		return
	}
	pkg, err := kernel.NewExtensionStore(d.home).Load(id)
	if err != nil || !pkg.Manifest.Has("panels") {
		notFound()
		return
	}
	ctype := panelTypes[path.Ext(file)]
	body, ok := pkg.Files[file]
	if !ok || ctype == "" || file == "extension.json" || file == pkg.Manifest.Main {
		notFound()
		return
	}
	own := "http://" + r.Host + d.panelBase(id)
	h := w.Header()
	h.Del("X-Frame-Options")
	h.Set("Content-Type", ctype)
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src "+own+"; style-src "+own+" 'unsafe-inline'; img-src "+own+" data:; "+
		"connect-src 'none'; form-action 'none'; base-uri 'none'; frame-ancestors 'self'; sandbox allow-scripts")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// panelCall is one call a panel made through the app's bridge, for the
// extension whose frame it came from: answered only when that approved
// extension has panels and the call's permission.
func (d *Daemon) panelCall(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Method string            `json:"method"`
		Args   []json.RawMessage `json:"args"`
	}
	if err := readBody(r, &body); err != nil {
		fail(w, err)
		return
	}
	pkg, err := kernel.NewExtensionStore(d.home).Load(r.PathValue("id"))
	if err != nil {
		writeJSON(w, http.StatusConflict, apiError{Error: err.Error()})
		return
	}
	if !pkg.Manifest.Has("panels") {
		writeJSON(w, http.StatusForbidden, apiError{Error: pkg.Manifest.ID + " has no panels"})
		return
	}
	if err := kernel.ExtensionAllowed(pkg.Manifest, body.Method); err != nil {
		writeJSON(w, http.StatusForbidden, apiError{Error: err.Error()})
		return
	}
	if body.Args == nil {
		body.Args = []json.RawMessage{}
	}
	args, _ := json.Marshal(body.Args)
	svc := d.k.ExtensionServices(func(ext, text string) {
		d.log.Info("extension notice", "extension", ext, "text", text)
	})
	res, err := svc.Call(r.Context(), pkg.Manifest, body.Method, args)
	if err != nil {
		writeJSON(w, http.StatusUnprocessableEntity, apiError{Error: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]json.RawMessage{"result": res})
}

// extensionTheme hands out an approved extension's theme: colours for
// named parts only, each #rrggbb, checked again by the kernel.
func (d *Daemon) extensionTheme(w http.ResponseWriter, r *http.Request) {
	th, err := kernel.NewExtensionStore(d.home).Theme(r.PathValue("id"), r.PathValue("theme"))
	if errors.Is(err, kernel.ErrExtensionNotApproved) {
		writeJSON(w, http.StatusConflict, apiError{Error: err.Error()})
		return
	}
	if err != nil {
		writeJSON(w, http.StatusNotFound, apiError{Error: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, th)
}
