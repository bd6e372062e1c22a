package extensions

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kulehq/kule/kernel/internal/lockfile"
	"github.com/kulehq/kule/sdk/extension"
)

// pack packs an extension folder made of files and returns its bytes.
func pack(t *testing.T, files map[string]string) []byte {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, _, err := extension.Pack(dir)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func helloFiles(version, main string) map[string]string {
	return map[string]string{
		"extension.json": `{"id":"me.hello","name":"Hello","version":"` + version + `",
 "permissions":["commands","agents","mcp","tasks.read"],
 "commands":[{"id":"greet","title":"Say hello"}],
 "agents":[{"name":"helper","file":"helper.toml"}],
 "mcp_servers":[{"name":"search","command":["search-mcp","--stdio"]}]}`,
		"main.js":     main,
		"helper.toml": "command = [\"helper\"]\n",
	}
}

func TestInstallApproveLoad(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	s := New(home)
	pkg, err := s.Install(pack(t, helloFiles("0.1.0", "1")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load("me.hello"); !errors.Is(err, ErrNotApproved) || !strings.Contains(err.Error(), "not approved yet") {
		t.Fatalf("unapproved package loaded: %v", err)
	}
	if _, err := s.Approve("me.hello", strings.Repeat("0", 64)); !errors.Is(err, ErrNotApproved) {
		t.Fatalf("approval of a sha256 the person did not see: %v", err)
	}
	st, err := s.Approve("me.hello", pkg.SHA256)
	if err != nil || !st.Approved {
		t.Fatalf("approve: %+v %v", st, err)
	}
	lk, err := lockfile.Read(home)
	if err != nil || lk.Extensions["me.hello"].Hash(lockfile.SHA256) != pkg.SHA256 || lk.Extensions["me.hello"].Version != "0.1.0" {
		t.Fatalf("kule.lock: %+v %v", lk, err)
	}
	got, err := s.Load("me.hello")
	if err != nil || got.SHA256 != pkg.SHA256 {
		t.Fatalf("load: %v", err)
	}
	list, err := s.List()
	if err != nil || len(list) != 1 || !list[0].Approved {
		t.Fatalf("list: %+v %v", list, err)
	}

	if err := s.SetDisabled("me.hello", true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load("me.hello"); !errors.Is(err, ErrDisabled) {
		t.Fatalf("disabled extension loaded: %v", err)
	}
	if err := s.SetDisabled("me.hello", false); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove("me.hello"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Status("me.hello"); !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("removed: %v", err)
	}
	lk, _ = lockfile.Read(home)
	if len(lk.Extensions) != 0 {
		t.Fatalf("approval kept after remove: %+v", lk.Extensions)
	}
}

// TestChangedAfterApprovalWaits: a package changed after its approval — a
// new install with the same version, or the installed file replaced on disk
// — waits for approval again.
func TestChangedAfterApprovalWaits(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	s := New(home)
	pkg, err := s.Install(pack(t, helloFiles("0.1.0", "1")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Approve("me.hello", pkg.SHA256); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Install(pack(t, helloFiles("0.1.0", "kule.evil()"))); err != nil {
		t.Fatal(err)
	}
	_, err = s.Load("me.hello")
	if !errors.Is(err, ErrNotApproved) || !strings.Contains(err.Error(), "package changed since approval") {
		t.Fatalf("changed package: %v", err)
	}
	if _, err := s.Install(pack(t, helloFiles("0.2.0", "1"))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load("me.hello"); !errors.Is(err, ErrNotApproved) || !strings.Contains(err.Error(), "version changed") {
		t.Fatalf("new version: %v", err)
	}
	// Behind Kule's back: the file itself is replaced.
	if _, err := s.Approve("me.hello", ""); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(Dir(home), "me.hello.kulext")
	os.Chmod(p, 0o600)
	if err := os.WriteFile(p, pack(t, helloFiles("0.2.0", "kule.evil()")), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load("me.hello"); !errors.Is(err, ErrNotApproved) {
		t.Fatalf("package replaced on disk loaded: %v", err)
	}
}

// TestLinkedPackageRefused: an installed package replaced by a link to
// another (approved-looking) file is refused; the same read through a
// path that follows links would have read it.
func TestLinkedPackageRefused(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	s := New(home)
	data := pack(t, helloFiles("0.1.0", "1"))
	if _, err := s.Install(data); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Approve("me.hello", ""); err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(t.TempDir(), "x.kulext")
	if err := os.WriteFile(elsewhere, data, 0o600); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(Dir(home), "me.hello.kulext")
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, p); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load("me.hello"); err == nil || !strings.Contains(err.Error(), "is a link") {
		t.Fatalf("linked package: %v", err)
	}
	// Unguarded, the link is followed.
	if b, err := os.ReadFile(p); err != nil || len(b) != len(data) {
		t.Fatal("the link does not lead to a package: the test proves nothing")
	}
}

// TestPartsWaitForTheirOwnApproval: an approved extension's agent profile
// and MCP server are not usable until each is approved itself.
func TestPartsWaitForTheirOwnApproval(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	s := New(home)
	if _, err := s.Install(pack(t, helloFiles("0.1.0", "1"))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApprovePart("me.hello", "mcp", "search"); !errors.Is(err, ErrNotApproved) {
		t.Fatalf("part approved before its extension: %v", err)
	}
	if _, err := s.Approve("me.hello", ""); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"agent", "mcp"} {
		name := map[string]string{"agent": "helper", "mcp": "search"}[kind]
		if _, _, err := s.UsePart("me.hello", kind, name); !errors.Is(err, ErrNotApproved) {
			t.Fatalf("%s used before its own approval: %v", kind, err)
		}
		if kind == "agent" {
			// A profile is approved as a person's is (kule agents
			// approve), never here; the kernel tells the store.
			if _, err := s.ApprovePart("me.hello", kind, name); !errors.Is(err, ErrNotApproved) || !strings.Contains(err.Error(), "kule agents approve helper") {
				t.Fatalf("agent approved through the extension store: %v", err)
			}
			s.AgentApproved = func(n string, content []byte) bool { return n == "helper" && len(content) > 0 }
		} else if _, err := s.ApprovePart("me.hello", kind, name); err != nil {
			t.Fatal(err)
		}
		p, content, err := s.UsePart("me.hello", kind, name)
		if err != nil || !p.Approved {
			t.Fatalf("%s after approval: %v", kind, err)
		}
		if kind == "agent" && !strings.Contains(string(content), "helper") {
			t.Fatalf("profile content: %q", content)
		}
	}
	// A new version of the extension takes the parts' approvals back too.
	if _, err := s.Install(pack(t, helloFiles("0.1.1", "1"))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Approve("me.hello", ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.UsePart("me.hello", "mcp", "search"); !errors.Is(err, ErrNotApproved) {
		t.Fatalf("part approval survived a new version: %v", err)
	}
}

// TestAllowed: a call is allowed only with its permission; a call Kule does
// not offer (commit, secrets) is refused whatever was granted.
func TestAllowed(t *testing.T) {
	t.Parallel()
	m := &extension.Manifest{ID: "me.x", Permissions: []extension.Permission{extension.PermTasksRead}}
	if err := Allowed(m, "tasks.list"); err != nil {
		t.Fatal(err)
	}
	for _, call := range []string{"review.effects", "files.read", "commit", "secrets.get", "undo", "policy.set"} {
		if err := Allowed(m, call); !errors.Is(err, ErrDenied) {
			t.Errorf("%s: %v", call, err)
		}
	}
	all := &extension.Manifest{ID: "me.all"}
	for p := range extension.Permissions {
		all.Permissions = append(all.Permissions, p)
	}
	for _, call := range []string{"commit", "rollback", "undo", "secrets.get", "questions.answer", "policy.set", "rules.allow", "home.read"} {
		if err := Allowed(all, call); !errors.Is(err, ErrDenied) {
			t.Errorf("%s allowed with every permission: %v", call, err)
		}
	}
}

func TestTheme(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	s := New(home)
	files := map[string]string{
		"extension.json":       `{"id":"me.dusk","name":"Dusk","version":"1.0.0","permissions":["themes"],"themes":[{"id":"dusk","title":"Dusk","file":"dusk.kule-theme.json"}]}`,
		"main.js":              "1",
		"dusk.kule-theme.json": `{"name":"Dusk","dark":true,"colors":{"bg":"#101820"}}`,
	}
	if _, err := s.Install(pack(t, files)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Theme("me.dusk", "dusk"); !errors.Is(err, ErrNotApproved) {
		t.Fatalf("theme of an unapproved extension: %v", err)
	}
	if _, err := s.Approve("me.dusk", ""); err != nil {
		t.Fatal(err)
	}
	th, err := s.Theme("me.dusk", "dusk")
	if err != nil || th.Colors["bg"] != "#101820" || !th.Dark {
		t.Fatalf("theme: %+v %v", th, err)
	}
	if _, err := s.Theme("me.dusk", "other"); !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("missing theme: %v", err)
	}
}

// TestMCPServerOfferedOnlyOnceApproved: an approved extension's MCP server
// is not offered to agents until it has its own approval, nor after the
// extension is disabled or changes version; with that check taken away
// (offerUnapproved) it would be offered before its approval.
func TestMCPServerOfferedOnlyOnceApproved(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	s := New(home)
	if _, err := s.Install(pack(t, helloFiles("0.1.0", "1"))); err != nil {
		t.Fatal(err)
	}
	offered := func(s *Store) []OfferedMCP {
		t.Helper()
		o, _, err := s.OfferedMCP()
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	if o := offered(s); len(o) != 0 {
		t.Fatalf("offered before the extension was approved: %+v", o)
	}
	if _, err := s.Approve("me.hello", ""); err != nil {
		t.Fatal(err)
	}
	o, waiting, _ := s.OfferedMCP()
	if len(o) != 0 || len(waiting) != 1 || !strings.Contains(waiting[0], "kule ext approve me.hello --mcp search") {
		t.Fatalf("before its own approval: offered %+v, waiting %q", o, waiting)
	}
	loose := New(home)
	loose.offerUnapproved = true
	if o := offered(loose); len(o) != 1 || o[0].Name != "search" {
		t.Fatalf("with the guard off it should have been offered: %+v", o)
	}
	if _, err := s.ApprovePart("me.hello", "mcp", "search"); err != nil {
		t.Fatal(err)
	}
	if o := offered(s); len(o) != 1 || o[0].Extension != "me.hello" || strings.Join(o[0].Command, " ") != "search-mcp --stdio" {
		t.Fatalf("after its approval: %+v", o)
	}
	if err := s.SetDisabled("me.hello", true); err != nil {
		t.Fatal(err)
	}
	if o := offered(s); len(o) != 0 {
		t.Fatalf("offered while its extension is disabled: %+v", o)
	}
	if err := s.SetDisabled("me.hello", false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Install(pack(t, helloFiles("0.2.0", "1"))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Approve("me.hello", ""); err != nil {
		t.Fatal(err)
	}
	if o := offered(s); len(o) != 0 {
		t.Fatalf("offered after a new version without its own approval: %+v", o)
	}
}
