package agents

import (
	"os"
	"strings"
	"testing"
)

// FuzzParse: any agents.toml either fails to parse, or each profile it holds
// passes Validate only if its paths stay clear of what Kule hides, and its
// TOML form reads back to the same hash.
func FuzzParse(f *testing.F) {
	f.Add([]byte("[[agent]]\nname = \"a\"\ncommand = [\"npx\", \"-y\", \"a@1.0.0\"]\nstate = [\".a\"]\n"))
	f.Add([]byte("[[agent]]\nname = \"b\"\ncommand = [\"b\"]\nkeys = { K = [\"x.io\"] }\nhosts = [\"x.io\"]\nlogin = [\"~/.b/auth\"]\n"))
	f.Add([]byte("[[agent]]\nname = \"c\"\ncommand = [\"c\"]\nstate = [\".ssh/../.ssh\"]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ps, err := Parse(b, "fuzz")
		if err != nil {
			return
		}
		for _, p := range ps {
			if Validate(p, nil) != nil {
				continue
			}
			for _, l := range [][]string{p.State, p.Login, p.ReadOnly} {
				for _, raw := range l {
					c, err := homePath(raw)
					if err != nil {
						t.Fatalf("valid profile with a bad path %q", raw)
					}
					for _, h := range append(append([]string(nil), Hidden...), KuleOwn...) {
						if overlaps(c, h) {
							t.Fatalf("valid profile opens %s through %q", h, raw)
						}
					}
				}
			}
			again, err := Parse([]byte(p.TOML()), "again")
			if err != nil || len(again) != 1 || again[0].Hash() != p.Hash() {
				t.Fatalf("profile does not read back: %v\n%s", err, p.TOML())
			}
		}
	})
}

// FuzzPackageOf: a command accepted as fetching a package names one exact version.
func FuzzPackageOf(f *testing.F) {
	for _, s := range []string{"npx -y a@1.2.3 acp", "npx @s/a@1.0.0-rc.1", "uvx a==1.0.0", "npx a@^1", "npx a", "pnpm dlx a@1.0.0",
		"npm exec --yes pkg@latest", "env npx -y pkg", "uv tool run pkg", "sh -c npx\x20-y\x20pkg@latest", "C:\\n\\npx.cmd pkg@latest"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cmd := strings.Fields(s)
		// A profile whose command passes runs no fetched package but one
		// of exactly one version, whatever wraps it.
		if len(cmd) > 0 && Validate(Profile{Name: "f", Source: "fuzz", Command: cmd}, nil) == nil {
			if err := checkCommand(cmd); err != nil {
				t.Fatalf("%q passed Validate but not checkCommand: %v", s, err)
			}
		}
		pkg, ok, err := PackageOf(cmd)
		if !ok || err != nil {
			return
		}
		if !exactRE.MatchString(pkg.Version) || pkg.Name == "" {
			t.Fatalf("accepted %q as %+v", s, pkg)
		}
	})
}

// FuzzParseRegistry: the registry decoder never panics, and every entry it
// drafts from is a profile that passes or is refused with a reason.
func FuzzParseRegistry(f *testing.F) {
	f.Add([]byte(`{"version":"1.0.0","agents":[{"id":"a","name":"A","version":"1.0.0","description":"d","distribution":{"npx":{"package":"a@1.0.0"}}}]}`))
	f.Add([]byte(`{"version":"1.0.0","agents":[{"id":"b","distribution":{"future":{"x":1},"binary":{"linux-x86_64":{"archive":"u","cmd":"./b"}}}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseRegistry(b)
		if err != nil {
			return
		}
		for _, e := range r.Agents {
			p, _, err := Draft(e)
			if err == nil {
				_ = Validate(p, nil)
			}
		}
	})
}

// FuzzAddHosts: whatever agents.toml holds, AddHosts either refuses and
// keeps the file, or changes the profile's hosts and nothing else.
func FuzzAddHosts(f *testing.F) {
	f.Add("[[agent]]\nname = \"a\"\ncommand = [\"a\"]\n")
	f.Add("[[agent]]\nname = \"a\" # x\ncommand = [\"a\"]\nhosts = [\n \"h.test\", # y\n]\n[[agent]]\nname = \"b\"\ncommand = [\"b\"]\n")
	f.Add("[[agent]]\nname = \"a\"\ncommand = [\"a\"]\n[agent.env]\nX = \"1\"\n")
	f.Fuzz(func(t *testing.T, src string) {
		home := t.TempDir()
		path := PersonalPath(home)
		if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		before, perr := Parse([]byte(src), path)
		_, err := AddHosts(home, "a", []string{"new.test"})
		after, _ := os.ReadFile(path)
		if err != nil {
			if string(after) != src {
				t.Fatalf("a refused change rewrote the file:\n%q\n%q", src, after)
			}
			return
		}
		if perr != nil {
			t.Fatalf("a file that does not parse was changed: %v", perr)
		}
		got, err := Parse(after, path)
		if err != nil || len(got) != len(before) {
			t.Fatalf("the changed file: %v (%d profiles, were %d)", err, len(got), len(before))
		}
		for i := range got {
			if got[i].Name == "a" {
				got[i].Hosts = before[i].Hosts
			}
			if got[i].Hash() != before[i].Hash() {
				t.Fatalf("profile %q changed beyond its hosts", got[i].Name)
			}
		}
	})
}
