package pluginhost

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

func selfExe(t testing.TB) string {
	t.Helper()
	p, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newHost(t testing.TB, builtins ...Builtin) *Host {
	t.Helper()
	h := New(t.TempDir(), Options{
		Self:         selfExe(t),
		Builtins:     builtins,
		CallTimeout:  2 * time.Second,
		StartTimeout: 20 * time.Second,
		Logger:       hclog.New(&hclog.LoggerOptions{Name: "kule", Output: io.Discard}),
		CmdFactory:   DirectCmd, // these tests watch markers the sandbox would forbid; sandbox_test.go runs plugins sandboxed
	})
	t.Cleanup(func() { removeTree(h.pluginsDir()) }) // read-only installs: t.TempDir cannot remove them as non-root
	t.Cleanup(h.Close)
	return h
}

func txtBuiltin(name string) Builtin {
	return Builtin{Kind: "differ", Name: name, Accepts: func(p string) bool { return strings.HasSuffix(p, ".txt") }}
}

// makePlugin puts a copy of this test binary and a manifest for it into a
// fresh directory named name (the fake plugin's mode) and returns it.
func makePlugin(t testing.TB, name string, edit func(*Manifest)) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := copyFile(t, selfExe(t), filepath.Join(dir, name), nil)
	m := Manifest{Name: name, Kind: "differ", Version: "1.0.0", Executable: name, SHA256: sum, Differ: DifferConfig{Patterns: []string{"*.txt", "*.ini"}}}
	if edit != nil {
		edit(&m)
	}
	writeManifest(t, filepath.Join(dir, ManifestFile), m)
	return dir
}

// copyFile copies src to dst (appending extra) and returns dst's sha256.
func copyFile(t testing.TB, src, dst string, extra []byte) string {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(out, h), in); err != nil {
		t.Fatal(err)
	}
	out.Write(extra)
	h.Write(extra)
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func writeManifest(t testing.TB, path string, m Manifest) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "name = %q\nkind = %q\nversion = %q\nexecutable = %q\nsha256 = %q\ndescription = %q\n", m.Name, m.Kind, m.Version, m.Executable, m.SHA256, m.Description)
	if len(m.Permissions) > 0 {
		fmt.Fprintf(&b, "permissions = [\"%s\"]\n", strings.Join(m.Permissions, `", "`))
	}
	if len(m.Differ.Patterns) > 0 {
		fmt.Fprintf(&b, "\n[differ]\npatterns = [")
		for i, p := range m.Differ.Patterns {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%q", p)
		}
		b.WriteString("]\n")
	}
	if len(m.Previewer.Patterns) > 0 {
		fmt.Fprintf(&b, "\n[previewer]\npatterns = [")
		for i, p := range m.Previewer.Patterns {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%q", p)
		}
		b.WriteString("]\n")
	}
	_ = os.Chmod(path, 0o644)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func clearMarker(t testing.TB, mode string) {
	t.Helper()
	os.Remove(filepath.Join(markerDir(os.Getpid()), mode))
	t.Cleanup(func() { os.RemoveAll(markerDir(os.Getpid())) })
}

func ran(mode string) bool {
	_, err := os.Stat(filepath.Join(markerDir(os.Getpid()), mode))
	return err == nil
}

// writable makes an installed (read-only) plugin directory writable again,
// as an attacker with the person's uid could.
func writable(t testing.TB, h *Host, name string) string {
	t.Helper()
	dir := h.Dir(name)
	ents, _ := os.ReadDir(dir)
	paths := []string{dir}
	for _, e := range ents {
		paths = append(paths, filepath.Join(dir, e.Name()))
	}
	for _, p := range paths {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestInstallApproveRun(t *testing.T) {
	h := newHost(t)
	clearMarker(t, "good")
	ctx := context.Background()
	if _, err := h.Install(makePlugin(t, "good", nil)); err != nil {
		t.Fatal(err)
	}
	st, err := h.Status("good")
	if err != nil || st.Approved || !strings.Contains(st.Reason, "never approved") {
		t.Fatalf("status after install = %+v, %v; want waiting, never approved", st, err)
	}
	if d := h.DifferFor(ctx, "a.txt"); d != nil {
		t.Fatalf("an unapproved plugin was chosen: %v", d)
	}
	if n := strings.Join(h.Notices(), "\n"); !strings.Contains(n, "good waits for approval") {
		t.Errorf("notices = %q, want one saying good waits for approval", n)
	}
	if ran("good") {
		t.Fatal("the unapproved plugin was executed")
	}
	if _, err := h.Approve("good"); err != nil {
		t.Fatal(err)
	}
	h2 := newHost(t) // a new command: a fresh host on the same home
	h2.home = h.home
	d := h2.DifferFor(ctx, "a.txt")
	if d == nil || d.Name() != "good" || d.Builtin() {
		t.Fatalf("DifferFor after approval = %v, want third-party good", d)
	}
	es, err := d.Entities(ctx, "a.txt", []byte("alpha one\nbeta two\n"))
	if err != nil || len(es) != 2 || es[1].ID() != "line beta" || es[1].Start != 10 {
		t.Fatalf("entities = %+v, %v", es, err)
	}
	if !ran("good") {
		t.Error("approved plugin ran but left no marker: the marker check proves nothing")
	}
	if _, err := d.Merge(ctx, "a.txt", nil, nil, nil); err == nil || !strings.Contains(err.Error(), "not implemented") {
		t.Errorf("merge on a differ without Merger = %v, want not implemented", err)
	}
	if d := h2.DifferFor(ctx, "a.go"); d != nil {
		t.Errorf("DifferFor(a.go) = %v, want none", d)
	}
}

// TestApprovalAbuse: ways to get an unapproved executable run. Each must be
// refused before exec; the marker file proves nothing ran.
func TestApprovalAbuse(t *testing.T) {
	tests := map[string]struct {
		// tamper changes the installed, approved plugin "good".
		tamper func(t *testing.T, h *Host)
		want   error
		reason string
	}{
		"never approved": {
			tamper: func(t *testing.T, h *Host) { os.Remove(h.approvalsPath()) },
			want:   ErrNotApproved, reason: "never approved",
		},
		"binary changed after approval": {
			tamper: func(t *testing.T, h *Host) {
				dir := writable(t, h, "good")
				copyFile(t, selfExe(t), filepath.Join(dir, "good"), []byte("tampered"))
			},
			want: ErrNotApproved, reason: "executable changed since approval",
		},
		"binary and manifest swapped together": {
			tamper: func(t *testing.T, h *Host) {
				dir := writable(t, h, "good")
				sum := copyFile(t, selfExe(t), filepath.Join(dir, "good"), []byte("evil"))
				writeManifest(t, filepath.Join(dir, ManifestFile), Manifest{Name: "good", Kind: "differ", Version: "1.0.0", Executable: "good", SHA256: sum, Differ: DifferConfig{Patterns: []string{"*.txt"}}})
			},
			want: ErrNotApproved, reason: "changed since approval",
		},
		"manifest edited": {
			tamper: func(t *testing.T, h *Host) {
				dir := writable(t, h, "good")
				st, _ := h.Status("good")
				m := st.Manifest
				m.Differ.Patterns = append(m.Differ.Patterns, "*")
				writeManifest(t, filepath.Join(dir, ManifestFile), m)
			},
			want: ErrNotApproved, reason: "manifest changed since approval",
		},
		"version bumped": {
			tamper: func(t *testing.T, h *Host) {
				dir := writable(t, h, "good")
				st, _ := h.Status("good")
				m := st.Manifest
				m.Version = "1.0.1"
				writeManifest(t, filepath.Join(dir, ManifestFile), m)
			},
			want: ErrNotApproved, reason: "version changed since approval: 1.0.0 → 1.0.1",
		},
		"executable replaced by a symlink": {
			tamper: func(t *testing.T, h *Host) {
				dir := writable(t, h, "good")
				elsewhere := filepath.Join(t.TempDir(), "good")
				copyFile(t, selfExe(t), elsewhere, nil)
				os.Remove(filepath.Join(dir, "good"))
				if err := os.Symlink(elsewhere, filepath.Join(dir, "good")); err != nil {
					t.Fatal(err)
				}
			},
			want: ErrExecutable, reason: "symlink",
		},
		"manifest replaced by a symlink": {
			tamper: func(t *testing.T, h *Host) {
				dir := writable(t, h, "good")
				data, _ := os.ReadFile(filepath.Join(dir, ManifestFile))
				other := filepath.Join(t.TempDir(), "plugin.toml")
				os.WriteFile(other, data, 0o644)
				os.Remove(filepath.Join(dir, ManifestFile))
				os.Symlink(other, filepath.Join(dir, ManifestFile))
			},
			want: ErrManifest, reason: "symlink",
		},
		"approvals record forged for another hash": {
			tamper: func(t *testing.T, h *Host) {
				aps, _ := h.approvals()
				a := aps["good"]
				a.SHA256 = strings.Repeat("0", 64)
				if err := h.setApproval("good", &a); err != nil {
					t.Fatal(err)
				}
			},
			want: ErrNotApproved, reason: "changed since approval",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := newHost(t)
			if _, err := h.Install(makePlugin(t, "good", nil)); err != nil {
				t.Fatal(err)
			}
			if _, err := h.Approve("good"); err != nil {
				t.Fatal(err)
			}
			tc.tamper(t, h)
			clearMarker(t, "good")
			_, err := h.get(context.Background(), "differ", "good", false)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("start after tampering = %v; want %v saying %q", err, tc.want, tc.reason)
			}
			if ran("good") {
				t.Fatal("the tampered plugin was executed")
			}
			if d := h.DifferFor(context.Background(), "a.txt"); d != nil {
				t.Errorf("DifferFor chose the tampered plugin: %v", d)
			}
			if st, err := h.Status("good"); err == nil && st.Approved {
				t.Errorf("status says approved after tampering: %+v", st)
			}
		})
	}
}

func TestInstallRefusals(t *testing.T) {
	t.Run("executable does not match manifest", func(t *testing.T) {
		h := newHost(t)
		dir := makePlugin(t, "good", func(m *Manifest) { m.SHA256 = strings.Repeat("a", 64) })
		_, err := h.Install(dir)
		if !errors.Is(err, ErrExecutable) || !strings.Contains(err.Error(), "nothing was installed") {
			t.Fatalf("install = %v, want ErrExecutable, nothing installed", err)
		}
		if names, _ := h.List(); len(names) != 0 {
			t.Fatalf("installed %v after a refused install", names)
		}
	})
	t.Run("approve refuses a mismatching executable", func(t *testing.T) {
		h := newHost(t)
		if _, err := h.Install(makePlugin(t, "good", nil)); err != nil {
			t.Fatal(err)
		}
		dir := writable(t, h, "good")
		copyFile(t, selfExe(t), filepath.Join(dir, "good"), []byte("x"))
		if _, err := h.Approve("good"); !errors.Is(err, ErrExecutable) {
			t.Fatalf("approve = %v, want ErrExecutable", err)
		}
		if aps, _ := h.approvals(); len(aps) != 0 {
			t.Fatalf("approvals recorded: %v", aps)
		}
	})
	t.Run("bad manifest", func(t *testing.T) {
		h := newHost(t)
		dir := makePlugin(t, "good", func(m *Manifest) { m.Kind = "rootkit" })
		if _, err := h.Install(dir); !errors.Is(err, ErrManifest) {
			t.Fatalf("install = %v, want ErrManifest", err)
		}
	})
	t.Run("remove forgets approval", func(t *testing.T) {
		h := newHost(t)
		if _, err := h.Install(makePlugin(t, "good", nil)); err != nil {
			t.Fatal(err)
		}
		h.Approve("good")
		if err := h.Remove("good"); err != nil {
			t.Fatal(err)
		}
		if aps, _ := h.approvals(); len(aps) != 0 {
			t.Errorf("approval kept after remove: %v", aps)
		}
		if _, err := h.Status("good"); !errors.Is(err, ErrNotInstalled) {
			t.Errorf("status after remove = %v, want ErrNotInstalled", err)
		}
	})
}

// install installs and approves the fake plugin mode.
func install(t testing.TB, h *Host, mode string) {
	t.Helper()
	if _, err := h.Install(makePlugin(t, mode, nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Approve(mode); err != nil {
		t.Fatal(err)
	}
}

// TestMisbehavingPlugins: a plugin that crashes, hangs, panics or answers
// garbage costs one file's names, and the next file still gets them.
func TestMisbehavingPlugins(t *testing.T) {
	tests := map[string]struct {
		bad     string // bytes that make it misbehave
		want    error
		restart bool // the process had to be replaced
	}{
		"crash":   {bad: "boom\n", want: ErrCall, restart: true},
		"hang":    {bad: "hang\n", want: ErrCall, restart: true},
		"panic":   {bad: "boom\n", want: ErrCall},
		"garbage": {bad: "anything\n", want: ErrGarbage},
	}
	for mode, tc := range tests {
		t.Run(mode, func(t *testing.T) {
			h := newHost(t)
			install(t, h, mode)
			ctx := context.Background()
			d := h.DifferFor(ctx, "a.txt")
			if d == nil || d.Name() != mode {
				t.Fatalf("DifferFor = %v", d)
			}
			first, err := h.get(ctx, "differ", mode, false)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := d.Entities(ctx, "bad.txt", []byte(tc.bad)); !errors.Is(err, tc.want) || !strings.Contains(err.Error(), mode) {
				t.Fatalf("entities of the bad file = %v, want %v naming the plugin", err, tc.want)
			}
			if mode == "garbage" {
				return
			}
			es, err := d.Entities(ctx, "good.txt", []byte("fine words\n"))
			if err != nil || len(es) != 1 {
				t.Fatalf("entities of the next file = %+v, %v; want its names", es, err)
			}
			second, _ := h.get(ctx, "differ", mode, false)
			if (first != second) != tc.restart {
				t.Errorf("process replaced = %v, want %v", first != second, tc.restart)
			}
		})
	}
}

func TestGivesUpAfterMaxStarts(t *testing.T) {
	h := newHost(t)
	h.opts.MaxStarts = 2
	install(t, h, "crash")
	ctx := context.Background()
	d := h.DifferFor(ctx, "a.txt")
	for i := range 2 {
		if _, err := d.Entities(ctx, "a.txt", []byte("boom")); !errors.Is(err, ErrCall) {
			t.Fatalf("call %d = %v, want ErrCall", i, err)
		}
	}
	if _, err := d.Entities(ctx, "a.txt", []byte("fine")); !errors.Is(err, ErrGivenUp) {
		t.Fatalf("third start = %v, want ErrGivenUp", err)
	}
}

func TestHandshakeMismatch(t *testing.T) {
	tests := map[string]string{
		"badcookie":  "exited before the handshake",
		"badversion": "another protocol version",
	}
	for mode, want := range tests {
		t.Run(mode, func(t *testing.T) {
			h := newHost(t)
			install(t, h, mode)
			_, err := h.get(context.Background(), "differ", mode, false)
			if !errors.Is(err, ErrHandshake) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `"`+mode+`"`) {
				t.Fatalf("start = %v, want ErrHandshake naming %q and saying %q", err, mode, want)
			}
		})
	}
}

func TestBuiltinsAndPrecedence(t *testing.T) {
	ctx := context.Background()
	t.Run("builtin runs out of process", func(t *testing.T) {
		clearMarker(t, "lines")
		h := newHost(t, txtBuiltin("lines"))
		d := h.DifferFor(ctx, "notes.txt")
		if d == nil || !d.Builtin() || d.Name() != "lines" {
			t.Fatalf("DifferFor = %v, want built-in lines", d)
		}
		es, err := d.Entities(ctx, "notes.txt", []byte("a\nb\n"))
		if err != nil || len(es) != 2 {
			t.Fatalf("entities = %v, %v", es, err)
		}
		if !ran("lines") {
			t.Error("built-in answered without a plugin process")
		}
	})
	t.Run("approved third-party comes first", func(t *testing.T) {
		h := newHost(t, txtBuiltin("lines"))
		install(t, h, "merger")
		if d := h.DifferFor(ctx, "notes.txt"); d == nil || d.Builtin() || d.Name() != "merger" {
			t.Fatalf("DifferFor = %v, want third-party merger", d)
		}
	})
	t.Run("unapproved third-party leaves the built-in", func(t *testing.T) {
		h := newHost(t, txtBuiltin("lines"))
		h.Install(makePlugin(t, "merger", nil))
		if d := h.DifferFor(ctx, "notes.txt"); d == nil || !d.Builtin() {
			t.Fatalf("DifferFor = %v, want the built-in", d)
		}
	})
	t.Run("same name replaces the built-in", func(t *testing.T) {
		h := newHost(t, Builtin{Kind: "differ", Name: "lines", Accepts: func(string) bool { return true }})
		if _, err := h.Install(makePlugin(t, "lines", func(m *Manifest) { m.Differ.Patterns = []string{"*.ini"} })); err != nil {
			t.Fatal(err)
		}
		h.Approve("lines")
		if d := h.DifferFor(ctx, "a.md"); d != nil {
			t.Fatalf("DifferFor(a.md) = %v; the replaced built-in still read it", d)
		}
		if d := h.DifferFor(ctx, "a.ini"); d == nil || d.Builtin() {
			t.Fatalf("DifferFor(a.ini) = %v, want the third-party lines", d)
		}
	})
	t.Run("merge through the plugin", func(t *testing.T) {
		h := newHost(t)
		install(t, h, "merger")
		d := h.DifferFor(ctx, "a.txt")
		r, err := d.Merge(ctx, "a.txt", []byte("a\n"), []byte("a\n"), []byte("b\n"))
		if err != nil || string(r.Merged) != "b\n" || len(r.Conflicts) != 0 {
			t.Fatalf("merge = %+v, %v", r, err)
		}
		r, err = d.Merge(ctx, "a.txt", []byte("a\n"), []byte("c\n"), []byte("b\n"))
		if err != nil || r.Merged != nil || len(r.Conflicts) != 1 {
			t.Fatalf("conflicting merge = %+v, %v", r, err)
		}
	})
}

// TestCmdFactorySeam: every launch goes through the host's CmdFactory (where
// the sandbox wraps plugins), with the verified in-memory copy for a
// third-party plugin and the kule binary itself for a built-in.
func TestCmdFactorySeam(t *testing.T) {
	var specs []LaunchSpec
	h := newHost(t, txtBuiltin("lines"))
	h.opts.CmdFactory = func(ctx context.Context, spec LaunchSpec) (*exec.Cmd, error) {
		specs = append(specs, spec)
		return DirectCmd(ctx, spec)
	}
	install(t, h, "good")
	ctx := context.Background()
	if _, err := h.get(ctx, "differ", "good", false); err != nil {
		t.Fatal(err)
	}
	if _, err := h.get(ctx, "differ", "lines", true); err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2 {
		t.Fatalf("factory called %d times, want 2", len(specs))
	}
	third, built := specs[0], specs[1]
	if third.Exe == nil || !strings.HasPrefix(third.Path, "/proc/self/fd/") || third.Args[0] != filepath.Join(h.Dir("good"), "good") {
		t.Errorf("third-party spec = %+v; want the sealed copy", third)
	}
	if built.Exe != nil || built.Path != selfExe(t) || strings.Join(built.Args[1:], " ") != "__plugin differ/lines" {
		t.Errorf("built-in spec = %+v; want kule-plugins __plugin differ/lines", built)
	}

	h2 := newHost(t)
	h2.home = h.home
	h2.opts.CmdFactory = func(context.Context, LaunchSpec) (*exec.Cmd, error) { return nil, errors.New("sandbox unavailable") }
	if _, err := h2.get(ctx, "differ", "good", false); !errors.Is(err, ErrHandshake) || !strings.Contains(err.Error(), "sandbox unavailable") {
		t.Fatalf("start with a failing factory = %v", err)
	}
}
