//go:build linux

package sandbox

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kulehq/kule/kernel/internal/credentials"
	"github.com/kulehq/kule/kernel/internal/runner"
)

// attackWith is attack with a sandbox of the test's own (one with a guard
// taken away).
func (w *world) attackWith(t *testing.T, s *Sandbox, spec runner.Spec, name string, args ...string) result {
	t.Helper()
	spec.Args = append([]string{w.attacker}, args...)
	env := spec.Env
	if env == nil {
		env = w.env
	}
	spec.Env = append(append([]string(nil), env...), "KULE_ATTACK="+name)
	return w.run(t, s, spec)
}

// assertEscaped is the attack with its guard taken away: it must get
// through, so that assertHeld cannot pass by accident.
func assertEscaped(t *testing.T, r result, what ...string) {
	t.Helper()
	for _, w := range what {
		if !strings.Contains(r.stdout, "ESCAPED: ") || !strings.Contains(r.stdout, w) {
			t.Fatalf("without the guard the attack should reach %s, and did not:\n%s\nstderr: %s", w, r.stdout, r.stderr)
		}
	}
}

// plant writes a marked secret at rel under the home: in the file itself,
// or inside it when credentials.Home names a folder (a name with no
// extension, but for the known dot files).
func plant(t *testing.T, home, rel string) string {
	t.Helper()
	p := filepath.Join(home, filepath.FromSlash(rel))
	if !isDotFile(rel) && !strings.Contains(strings.TrimPrefix(filepath.Base(rel), "."), ".") {
		p = filepath.Join(p, "secret")
	}
	write(t, p, marker+" "+rel)
	return p
}

// isDotFile: the entries of credentials.Home that are files at the top of
// the home although their name has no second dot.
func isDotFile(rel string) bool {
	switch rel {
	case ".netrc", ".git-credentials", ".npmrc", ".pypirc", ".vault-token", ".pgpass", ".Xauthority", ".ICEauthority",
		".terraformrc", ".s3cfg", ".boto", ".mylogin.cnf":
		return true
	}
	return false
}

// TestWalls reaches, from inside a real sandboxed command, for what the
// sandbox hides beyond TestEscape's list: every credential of the one list,
// the agents' logins, projects beside the workspace's ancestors, personal
// folders by their localized names. Each is shown reached with its guard
// taken away, then held with it.
func TestWalls(t *testing.T) {
	skipUnlessSandbox(t)
	t.Run("read-credentials-list", func(t *testing.T) {
		w := newWorld(t)
		var paths []string
		for _, c := range credentials.Home {
			paths = append(paths, plant(t, w.home, c))
		}
		off := w.sandbox()
		off.off.credentials = true
		assertEscaped(t, w.attackWith(t, off, runner.Spec{}, "read", paths...),
			".mozilla", ".config/google-chrome", ".config/op", ".config/rclone", ".pgpass", ".my.cnf",
			".docker/secret", ".config/github-copilot", ".m2/settings.xml", ".gradle/gradle.properties", ".kube", ".terraform.d")
		assertHeld(t, w.attack(t, runner.Spec{}, "read", paths...))
	})
	t.Run("read-agent-logins", func(t *testing.T) {
		w := newWorld(t)
		var logins []string
		for _, l := range credentials.AgentLogins {
			logins = append(logins, plant(t, w.home, l))
		}
		agentHome := filepath.Join(credentials.AgentHomes(w.home, ""), "codex")
		own := filepath.Join(agentHome, "auth.json")
		other := filepath.Join(credentials.AgentHomes(w.home, ""), "other", "auth.json")
		write(t, own, marker+" codex's own home")
		write(t, other, marker+" another agent's home")
		all := append(append([]string(nil), logins...), own, other)

		off := w.sandbox()
		off.off.logins = true
		assertEscaped(t, w.attackWith(t, off, runner.Spec{}, "read", all...), ".claude/.credentials.json", ".codex/auth.json", "codex/auth.json")
		assertHeld(t, w.attack(t, runner.Spec{}, "read", all...))

		// An agent's run opens its own login by its path, as
		// agents.OpeningsOf does: that one is read, every other held.
		claude := filepath.Join(w.home, ".claude", ".credentials.json")
		spec := runner.Spec{Reveal: []string{claude}, AllowWrite: []string{agentHome}}
		r := w.attackWith(t, w.sandbox(), spec, "read", claude, own)
		if !strings.Contains(r.stdout, "ESCAPED: read "+claude) || !strings.Contains(r.stdout, "ESCAPED: read "+own) {
			t.Fatalf("the agent's own login is not open to its run:\n%s\nstderr: %s", r.stdout, r.stderr)
		}
		var rest []string
		for _, p := range all {
			if p != claude && p != own {
				rest = append(rest, p)
			}
		}
		assertHeld(t, w.attack(t, spec, "read", rest...))
		// A wider opening around a login leaves the login hidden.
		wide := runner.Spec{AllowWrite: []string{filepath.Join(w.home, ".codex")}}
		assertHeld(t, w.attack(t, wide, "read", filepath.Join(w.home, ".codex", "auth.json")))
	})
	t.Run("list-sibling-projects", func(t *testing.T) {
		w := newWorld(t)
		w.task.Folder = filepath.Join(w.home, "code", "clientA", "app")
		write(t, filepath.Join(w.task.Folder, "main.go"), "package app")
		clientB := filepath.Join(w.home, "code", "clientB", "secret.txt")
		besideApp := filepath.Join(w.home, "code", "clientA", "tools", "secret.txt")
		write(t, clientB, marker+" clientB")
		write(t, besideApp, marker+" beside the folder")
		spec := runner.Spec{Reveal: []string{w.shared}}
		off := w.sandbox()
		off.off.siblings = true
		assertEscaped(t, w.attackWith(t, off, spec, "read", clientB), clientB)
		assertHeld(t, w.attack(t, spec, "read", clientB, besideApp))
		r := w.attack(t, spec, "read", filepath.Join(w.shared, "lib.go"))
		if !strings.Contains(r.stdout, "ESCAPED: read "+filepath.Join(w.shared, "lib.go")) {
			t.Fatalf("a revealed project beside the workspace is not open:\n%s\nstderr: %s", r.stdout, r.stderr)
		}
	})
	t.Run("go-workspace-keeps-module-cache", func(t *testing.T) {
		// A workspace in GOPATH: ~/go is hidden whole, but the module
		// cache the task's GOPROXY reads first stays readable.
		w := newWorld(t)
		w.task.Folder = filepath.Join(w.home, "go", "src", "example.com", "app")
		write(t, filepath.Join(w.task.Folder, "go.mod"), "module example.com/app")
		sibling := filepath.Join(w.home, "go", "src", "example.com", "other", "secret.go")
		write(t, sibling, marker+" another module's source")
		cached := filepath.Join(w.home, "go", "pkg", "mod", "cache", "download", "example.com", "dep", "@v", "list")
		write(t, cached, "v1.0.0\n")
		assertHeld(t, w.attack(t, runner.Spec{}, "read", sibling))
		r := w.attack(t, runner.Spec{}, "read", cached)
		if !strings.Contains(r.stdout, "ESCAPED: read "+cached) {
			t.Fatalf("the person's module cache is not readable:\n%s\nstderr: %s", r.stdout, r.stderr)
		}
	})
	t.Run("read-localized-personal-folders", func(t *testing.T) {
		w := newWorld(t)
		write(t, filepath.Join(w.home, ".config", "user-dirs.dirs"), "# written by xdg-user-dirs-update\n"+
			"XDG_DOCUMENTS_DIR=\"$HOME/Dokumente\"\nXDG_DOWNLOAD_DIR=\"$HOME/Téléchargements\"\nXDG_DESKTOP_DIR=\"$HOME/\"\n")
		paths := []string{
			filepath.Join(w.home, "Dokumente", "steuer.pdf"),
			filepath.Join(w.home, "Téléchargements", "relevé.pdf"),
			filepath.Join(w.home, "documents", "diary.txt"),
			filepath.Join(w.home, "DOWNLOADS", "statement.pdf"),
		}
		for _, p := range paths {
			write(t, p, marker+" "+p)
		}
		off := w.sandbox()
		off.off.userDirs = true
		assertEscaped(t, w.attackWith(t, off, runner.Spec{}, "read", paths...), "Dokumente", "Téléchargements", "documents", "DOWNLOADS")
		assertHeld(t, w.attack(t, runner.Spec{}, "read", paths...))
		// "$HOME/" turns a directory off: the home itself stays readable.
		r := w.attack(t, runner.Spec{}, "read", filepath.Join(w.home, "notes.txt"))
		if !strings.Contains(r.stdout, "ESCAPED: read") {
			t.Fatalf("the home is hidden by an XDG directory set to $HOME/:\n%s\nstderr: %s", r.stdout, r.stderr)
		}
	})
	t.Run("connect-named-sockets", func(t *testing.T) {
		w := newWorld(t)
		var sockets []string
		if os.Getuid() == 0 {
			// A database's socket in /run, answering whoever connects.
			dir, err := os.MkdirTemp("/run", "kule-walls-postgresql-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			sockets = append(sockets, listenUnix(t, filepath.Join(dir, ".s.PGSQL.5432")))
		}
		// One in the home, outside anything hidden by name.
		sockets = append(sockets, listenUnix(t, filepath.Join(w.home, ".local", "share", "db", "db.sock")))
		off := w.sandbox()
		off.off.sockets = true
		assertEscaped(t, w.attackWith(t, off, runner.Spec{}, "unix", sockets...), sockets...)
		assertHeld(t, w.attack(t, runner.Spec{}, "unix", sockets...))

		// One in an --allow-write folder stays in reach, and the run says so.
		out := filepath.Join(w.root, "out")
		open := listenUnix(t, filepath.Join(out, "dev.sock"))
		var mu sync.Mutex
		var told []Refusal
		s := w.sandbox()
		s.Refused = func(r Refusal) { mu.Lock(); told = append(told, r); mu.Unlock() }
		r := w.attackWith(t, s, runner.Spec{AllowWrite: []string{out}}, "unix", open)
		if !strings.Contains(r.stdout, "ESCAPED: connected to unix socket") {
			t.Fatalf("a socket in an --allow-write folder is not in reach:\n%s\nstderr: %s", r.stdout, r.stderr)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(told) != 1 || told[0].Kind != SocketsReachable || !strings.Contains(told[0].What, open) {
			t.Fatalf("the run did not say which sockets stay in reach: %+v", told)
		}
	})
	t.Run("run-links-kept", func(t *testing.T) {
		target, err := os.Readlink("/run/shm")
		if err != nil {
			t.Skip("no /run/shm link on this system")
		}
		w := newWorld(t)
		r := w.run(t, w.sandbox(), runnerSpec("readlink", "/run/shm"))
		if strings.TrimSpace(r.stdout) != target {
			t.Fatalf("/run/shm inside is %q, outside %q (stderr %s)", r.stdout, target, r.stderr)
		}
	})
}

// listenUnix listens on a named unix socket at path until the test ends,
// and returns path.
func listenUnix(t *testing.T, path string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return path
}
