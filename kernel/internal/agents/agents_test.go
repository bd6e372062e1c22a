package agents

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The built-in profiles and the registry copy are read from the repository
// by path: kernel packages never import plugins/.
var builtinDir = filepath.Join("..", "..", "..", "plugins", "agent")

func loadBuiltins(t *testing.T, home string) *Set {
	t.Helper()
	s, err := Load(os.DirFS(builtinDir), home)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestBuiltinsLoadAndPass(t *testing.T) {
	t.Parallel()
	s := loadBuiltins(t, t.TempDir())
	var names []string
	for _, p := range s.Profiles {
		names = append(names, p.Name)
		if !p.Builtin {
			t.Errorf("%s not marked built-in", p.Name)
		}
		if len(p.Keys) == 0 || len(p.Hosts) == 0 || len(p.Login) == 0 || len(p.ReadOnly) == 0 {
			t.Errorf("%s: a built-in names its keys, hosts, login and read-only settings: %+v", p.Name, p)
		}
		if pkg, ok, err := PackageOf(p.Command); !ok || err != nil || pkg.Runner != "npx" {
			t.Errorf("%s: command %v: %v", p.Name, p.Command, err)
		}
	}
	if strings.Join(names, ",") != "claude-code,codex,gemini" {
		t.Errorf("built-ins %v", names)
	}
	if len(s.Problems) != 0 {
		t.Errorf("problems %v", s.Problems)
	}
}

func TestValidateRefuses(t *testing.T) {
	t.Parallel()
	ok := Profile{Name: "mine", Command: []string{"npx", "-y", "my-agent@1.2.3", "acp"}, State: []string{".local/share/mine"}, Source: "test"}
	others := []Profile{{Name: "claude-code", State: []string{".claude/projects"}, Login: []string{".claude/.credentials.json"}}}
	if err := Validate(ok, others); err != nil {
		t.Fatalf("a sound profile was refused: %v", err)
	}
	tests := map[string]struct {
		mod  func(p *Profile)
		want string
	}{
		"bad name":                 {func(p *Profile) { p.Name = "My Agent" }, "lower-case"},
		"no command":               {func(p *Profile) { p.Command = nil }, "no command"},
		"npx without version":      {func(p *Profile) { p.Command = []string{"npx", "-y", "my-agent"} }, "names no version"},
		"npx with a range":         {func(p *Profile) { p.Command = []string{"npx", "my-agent@^1.2.0"} }, "not one exact version"},
		"npx latest":               {func(p *Profile) { p.Command = []string{"npx", "-y", "@scope/a@latest"} }, "not one exact version"},
		"npx git spec":             {func(p *Profile) { p.Command = []string{"npx", "github:evil/agent@1.0.0"} }, "only registry packages"},
		"npx option smuggling":     {func(p *Profile) { p.Command = []string{"npx", "--package=evil", "a@1.0.0"} }, "only -y"},
		"pnpm dlx":                 {func(p *Profile) { p.Command = []string{"pnpm", "dlx", "a@1.0.0"} }, "use npx"},
		"uvx without version":      {func(p *Profile) { p.Command = []string{"uvx", "agent"} }, "names no version"},
		"ssh keys":                 {func(p *Profile) { p.State = []string{".ssh"} }, "credentials Kule hides"},
		"inside ssh":               {func(p *Profile) { p.Login = []string{".ssh/id_ed25519"} }, "credentials Kule hides"},
		"aws through ~/":           {func(p *Profile) { p.State = []string{"~/.aws/credentials"} }, "credentials Kule hides"},
		"gh token":                 {func(p *Profile) { p.State = []string{".config/gh"} }, "credentials Kule hides"},
		"parent of hidden":         {func(p *Profile) { p.ReadOnly = []string{".config"} }, "credentials Kule hides"},
		"kule home":                {func(p *Profile) { p.State = []string{".kule/keys"} }, "Kule's own home"},
		"kule packages":            {func(p *Profile) { p.State = []string{".local/share/kule/packages"} }, "Kule's own home"},
		"whole Documents":          {func(p *Profile) { p.State = []string{"Documents"} }, "whole personal directory"},
		"whole .cache":             {func(p *Profile) { p.State = []string{".cache/"} }, "whole personal directory"},
		"whole home":               {func(p *Profile) { p.State = []string{"."} }, "whole home"},
		"absolute":                 {func(p *Profile) { p.State = []string{"/etc"} }, "under ~"},
		"dotdot":                   {func(p *Profile) { p.State = []string{"x/../../etc"} }, "out of the home"},
		"variable":                 {func(p *Profile) { p.State = []string{"$XDG_DATA_HOME/x"} }, "under ~"},
		"another agent's state":    {func(p *Profile) { p.State = []string{".claude"} }, `belongs to the agent "claude-code"`},
		"another agent's login":    {func(p *Profile) { p.Login = []string{".claude/.credentials.json"} }, `belongs to the agent "claude-code"`},
		"host with scheme":         {func(p *Profile) { p.Hosts = []string{"https://api.x.com"} }, "not a host name"},
		"bare wildcard host":       {func(p *Profile) { p.Hosts = []string{"*"} }, "not a host name"},
		"key to wildcard":          {func(p *Profile) { p.Keys = map[string][]string{"X_KEY": {"*.x.com"}} }, "one exact host"},
		"key without host":         {func(p *Profile) { p.Keys = map[string][]string{"X_KEY": nil} }, "names no host"},
		"pass a secret":            {func(p *Profile) { p.PassEnv = []string{"GITHUB_TOKEN"} }, "looks like a secret"},
		"pass a key":               {func(p *Profile) { p.Keys = map[string][]string{"FOO": {"a.com"}}; p.PassEnv = []string{"FOO"} }, "is a key"},
		"pass LD_PRELOAD":          {func(p *Profile) { p.PassEnv = []string{"LD_PRELOAD"} }, "may not be passed"},
		"set NODE_OPTIONS":         {func(p *Profile) { p.Env = map[string]string{"NODE_OPTIONS": "--require /x"} }, "may not be set"},
		"own home of another name": {func(p *Profile) { p.OwnHome = "PATH" }, "own_home"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := ok
			p.State = append([]string(nil), ok.State...)
			tc.mod(&p)
			err := Validate(p, others)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want a refusal saying %q", err, tc.want)
			}
		})
	}
}

func TestPersonalProfilesNeedApproval(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	mine := `
[[agent]]
name = "opencode"
command = ["npx", "-y", "opencode-ai@1.2.3", "acp"]
state = [".local/share/opencode"]
login = [".local/share/opencode/auth.json"]
keys = { OPENROUTER_API_KEY = ["openrouter.ai"] }
hosts = ["openrouter.ai"]

[[agent]]
name = "greedy"
command = ["my-agent"]
state = [".ssh"]

[[agent]]
name = "codex"
command = ["codex-acp"]
`
	if err := os.WriteFile(PersonalPath(home), []byte(mine), 0o600); err != nil {
		t.Fatal(err)
	}
	s := loadBuiltins(t, home)
	if err := s.Problems["greedy"]; !errors.Is(err, ErrInvalid) {
		t.Errorf("greedy: %v", err)
	}
	if len(s.Skipped) != 1 || !errors.Is(s.Skipped[0], ErrDuplicate) {
		t.Errorf("a person's profile named like a built-in: %v", s.Skipped)
	}
	p, err := s.Get("opencode")
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckApproved(home, p); !errors.Is(err, ErrNotApproved) || !strings.Contains(err.Error(), "kule agents approve opencode") {
		t.Errorf("unapproved: %v", err)
	}
	if err := Approve(home, p, s.Profiles); err != nil {
		t.Fatal(err)
	}
	if err := CheckApproved(home, p); err != nil {
		t.Errorf("approved: %v", err)
	}
	// Any change waits for approval again.
	changed := strings.Replace(mine, `hosts = ["openrouter.ai"]`, `hosts = ["openrouter.ai", "evil.example.com"]`, 1)
	os.WriteFile(PersonalPath(home), []byte(changed), 0o600)
	s = loadBuiltins(t, home)
	p, _ = s.Get("opencode")
	if err := CheckApproved(home, p); !errors.Is(err, ErrNotApproved) || !strings.Contains(err.Error(), "changed since") {
		t.Errorf("changed profile: %v", err)
	}
	greedy := Profile{Name: "greedy", Command: []string{"x"}, State: []string{".ssh"}}
	if err := Approve(home, greedy, s.Profiles); !errors.Is(err, ErrInvalid) {
		t.Errorf("a refused profile was approved: %v", err)
	}
	if _, err := s.Get("nobody"); !errors.Is(err, ErrNoAgent) || !strings.Contains(err.Error(), "claude-code") {
		t.Errorf("unknown agent: %v", err)
	}
	old := nodeVersion
	nodeVersion = func() int { return 22 } // what the built-ins need
	defer func() { nodeVersion = old }()
	root, err := os.MkdirTemp("/var/tmp", "kule-packages-") // outside the /tmp the sandbox replaces
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(root)
	for _, st := range Check(s, CheckOptions{KuleHome: home, PackagesRoot: root}) {
		if st.Profile.Name == "opencode" && st.Approved {
			t.Errorf("check says the changed profile is approved")
		}
		if st.Profile.Builtin && !st.Approved {
			t.Errorf("a built-in needs no approval")
		}
	}
}

func TestUnknownKeysRefused(t *testing.T) {
	t.Parallel()
	_, err := Parse([]byte("[[agent]]\nname = \"a\"\ncommand = [\"a\"]\nstates = [\".a\"]\n"), "t")
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "states") {
		t.Errorf("typo: %v", err)
	}
}

func TestRegistryDrafts(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(builtinDir, "registry", "registry.json"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseRegistry(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Agents) < 10 {
		t.Fatalf("registry has %d agents", len(r.Agents))
	}
	home := t.TempDir()
	s := loadBuiltins(t, home)
	for _, e := range r.Agents {
		p, notes, err := Draft(e)
		if err != nil {
			if e.Distribution.Binary != nil {
				continue // no binary for this platform
			}
			t.Errorf("%s: %v", e.ID, err)
			continue
		}
		if len(notes) == 0 {
			t.Errorf("%s: a draft says what is left to do", e.ID)
		}
		if err := Validate(p, s.Profiles); err != nil {
			t.Errorf("%s: the draft is refused: %v", e.ID, err)
		}
		again, err := Parse([]byte(p.TOML()), "draft")
		if err != nil || len(again) != 1 || again[0].Hash() != p.Hash() {
			t.Errorf("%s: the drafted TOML does not read back: %v\n%s", e.ID, err, p.TOML())
		}
	}
	e, ok := r.Find("auggie")
	if !ok {
		t.Fatal("auggie missing")
	}
	p, _, _ := Draft(e)
	if strings.Join(p.Command, " ") != "npx -y @augmentcode/auggie@0.15.0 --acp" || p.Env["AUGMENT_DISABLE_AUTO_UPDATE"] != "1" {
		t.Errorf("auggie draft %+v", p)
	}
	if err := AppendPersonal(home, p, s.Profiles); err != nil {
		t.Fatal(err)
	}
	s = loadBuiltins(t, home)
	if got, err := s.Get("auggie"); err != nil || got.Hash() != p.Hash() {
		t.Errorf("added profile: %v", err)
	}
	if err := AppendPersonal(home, p, s.Profiles); !errors.Is(err, ErrDuplicate) {
		t.Errorf("adding twice: %v", err)
	}
}

func TestEnvironPassesOnlyWhatTheProfileSays(t *testing.T) {
	t.Parallel()
	person := map[string]string{"PATH": "/usr/bin", "ANTHROPIC_API_KEY": "sk-real", "GITHUB_TOKEN": "ghp", "AWS_SECRET_ACCESS_KEY": "aws", "EDITOR": "vi", "MY_FLAG": "1"}
	p := Profile{Name: "a", Keys: map[string][]string{"ANTHROPIC_API_KEY": {"api.anthropic.com"}, "OPENAI_API_KEY": {"api.openai.com"}}, PassEnv: []string{"MY_FLAG"}, Env: map[string]string{"X": "y"}, OwnHome: "CODEX_HOME"}
	env, notes := Environ(p, EnvOptions{Getenv: func(k string) string { return person[k] }, Home: "/h", OwnHome: "/k/agents/a", Tmp: "/t", Placeholder: func(k string) string { return "kule-placeholder-" + k }})
	got := strings.Join(env, " ")
	want := "ANTHROPIC_API_KEY=kule-placeholder-ANTHROPIC_API_KEY CODEX_HOME=/k/agents/a HOME=/h MY_FLAG=1 PATH=/usr/bin TMPDIR=/t X=y"
	if got != want {
		t.Errorf("env\n got %s\nwant %s", got, want)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "OPENAI_API_KEY is not set") {
		t.Errorf("notes %v", notes)
	}
	env, notes = Environ(p, EnvOptions{Getenv: func(k string) string { return person[k] }})
	if !strings.Contains(strings.Join(env, " "), "ANTHROPIC_API_KEY=sk-real") || !strings.Contains(strings.Join(notes, " "), "no key proxy") {
		t.Errorf("without a proxy the key passes and the person is told: %v %v", env, notes)
	}
}

func TestOpenings(t *testing.T) {
	t.Parallel()
	s := loadBuiltins(t, t.TempDir())
	claude, _ := s.Get("claude-code")
	o := OpeningsOf(claude, s.Profiles, "/home/p", "")
	has := func(list []string, x string) bool {
		for _, y := range list {
			if y == x {
				return true
			}
		}
		return false
	}
	if !has(o.AllowWrite, "/home/p/.claude/projects") || !has(o.AllowWrite, "/home/p/.claude/.credentials.json") {
		t.Errorf("claude's state and login are not writable: %v", o.AllowWrite)
	}
	if !has(o.Reveal, "/home/p/.claude/settings.json") || has(o.AllowWrite, "/home/p/.claude/settings.json") {
		t.Errorf("claude's settings must be read-only: %v / %v", o.Reveal, o.AllowWrite)
	}
	if !has(o.Hide, "/home/p/.codex/auth.json") || !has(o.Hide, "/home/p/.gemini/oauth_creds.json") || has(o.Hide, "/home/p/.claude/.credentials.json") {
		t.Errorf("other agents' logins are not hidden: %v", o.Hide)
	}
	if strings.Join(o.Hosts, ",") != "api.anthropic.com" {
		t.Errorf("hosts %v", o.Hosts)
	}
	own := Profile{Name: "x", OwnHome: "HOME", State: []string{".x"}}
	if o := OpeningsOf(own, nil, "/home/p", "/k/agent-homes/x"); len(o.AllowWrite) != 1 || o.AllowWrite[0] != "/k/agent-homes/x" {
		t.Errorf("own_home opens %v", o.AllowWrite)
	}
}

// Prepare fits the openings to the disk: a missing state folder is made, a
// missing file and a missing read-only path are left out, a state file is
// opened read-only (the sandbox opens only folders for writing).
func TestPrepareFitsOpeningsToTheDisk(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, ".tool.json"), []byte("{}"), 0o600)
	os.MkdirAll(filepath.Join(home, ".tool", "cache"), 0o700)
	o := Openings{
		AllowWrite: []string{filepath.Join(home, ".tool", "cache"), filepath.Join(home, ".tool", "sessions"), filepath.Join(home, ".tool.json"), filepath.Join(home, ".tool", "auth.json")},
		Reveal:     []string{filepath.Join(home, ".tool", "settings.json"), filepath.Join(home, ".tool", "cache")},
		Hide:       []string{filepath.Join(home, ".other")},
		Hosts:      []string{"api.example.com"},
	}
	got, notes := o.Prepare()
	want := Openings{
		AllowWrite: []string{filepath.Join(home, ".tool", "cache"), filepath.Join(home, ".tool", "sessions")},
		Reveal:     []string{filepath.Join(home, ".tool.json"), filepath.Join(home, ".tool", "cache")},
		Hide:       o.Hide,
		Hosts:      o.Hosts,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Prepare (-want +got):\n%s", diff)
	}
	if st, err := os.Stat(filepath.Join(home, ".tool", "sessions")); err != nil || !st.IsDir() {
		t.Errorf("the missing state folder was not made: %v", err)
	}
	if _, err := os.Stat(filepath.Join(home, ".tool", "auth.json")); err == nil {
		t.Error("a missing state file was made")
	}
	if len(notes) != 1 || !strings.Contains(notes[0], ".tool.json is a file") {
		t.Errorf("notes %q", notes)
	}
}

// AddHosts changes only the hosts of the named profile and keeps the rest
// of agents.toml, comments too; the profile then waits for approval again.
func TestAddHostsKeepsTheFile(t *testing.T) {
	for name, tc := range map[string]struct{ src, want string }{
		"no hosts yet": {
			src:  "# mine\n[[agent]]\nname = \"a\" # the first\ncommand = [\"a-agent\"]\n\n[[agent]]\nname = \"b\"\ncommand = [\"b-agent\"]\n",
			want: "# mine\n[[agent]]\nname = \"a\" # the first\nhosts = [\"api.a.test\", \"cdn.a.test\"]\ncommand = [\"a-agent\"]\n\n[[agent]]\nname = \"b\"\ncommand = [\"b-agent\"]\n",
		},
		"hosts over lines": {
			src:  "[[agent]]\nname = \"a\"\ncommand = [\"a-agent\"]\nhosts = [\n  \"api.a.test\", # its API\n]\nenv = { X = \"1\" }\n",
			want: "[[agent]]\nname = \"a\"\ncommand = [\"a-agent\"]\nhosts = [\"api.a.test\", \"cdn.a.test\"]\nenv = { X = \"1\" }\n",
		},
	} {
		t.Run(name, func(t *testing.T) {
			home := t.TempDir()
			os.WriteFile(PersonalPath(home), []byte(tc.src), 0o600)
			set, err := Load(os.DirFS(builtinDir), home)
			if err != nil {
				t.Fatal(err)
			}
			p, _ := set.Get("a")
			if err := Approve(home, p, set.Profiles); err != nil {
				t.Fatal(err)
			}
			added, err := AddHosts(home, "a", []string{"api.a.test", "cdn.a.test"})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(PersonalPath(home))
			if diff := cmp.Diff(tc.want, string(b)); diff != "" {
				t.Errorf("agents.toml (-want +got):\n%s", diff)
			}
			if name == "no hosts yet" && len(added) != 2 || name != "no hosts yet" && !slices.Equal(added, []string{"cdn.a.test"}) {
				t.Errorf("added %v", added)
			}
			set, _ = Load(os.DirFS(builtinDir), home)
			p, _ = set.Get("a")
			if err := CheckApproved(home, p); !errors.Is(err, ErrNotApproved) {
				t.Errorf("the changed profile is still approved: %v", err)
			}
		})
	}
	if _, err := AddHosts(t.TempDir(), "claude-code", []string{"x.test"}); !errors.Is(err, ErrNotPersonal) {
		t.Errorf("a built-in was changed: %v", err)
	}
}

// The first screen says which agents can start here and what the others
// lack: a machine without the sandbox starts none of them, and a key in
// Kule's secrets counts as a login.
func TestCheckSaysWhatIsMissing(t *testing.T) {
	home := t.TempDir()
	s := loadBuiltins(t, home)
	sts := Check(s, CheckOptions{KuleHome: home, PackagesRoot: t.TempDir(), Home: t.TempDir(),
		HasKey:    func(k string) bool { return k == "GEMINI_API_KEY" },
		Isolation: []string{"user namespaces: disabled"}})
	for _, st := range sts {
		if st.CanStart() {
			t.Errorf("%s can start without the sandbox", st.Profile.Name)
		}
		if !strings.Contains(strings.Join(st.Missing, "; "), "the sandbox here lacks user namespaces: disabled (kule isolation says more)") {
			t.Errorf("%s: missing %v", st.Profile.Name, st.Missing)
		}
		if st.Profile.Name == "gemini" && !slices.Contains(st.Auth, "GEMINI_API_KEY is in kule secrets") {
			t.Errorf("gemini's auth: %v", st.Auth)
		}
	}
	old := nodeVersion
	nodeVersion = func() int { return 22 } // what the built-ins need
	defer func() { nodeVersion = old }()
	root, err := os.MkdirTemp("/var/tmp", "kule-packages-") // outside the /tmp the sandbox replaces
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(root)
	for _, st := range Check(s, CheckOptions{KuleHome: home, PackagesRoot: root}) {
		if _, err := exec.LookPath("npm"); err == nil && !st.CanStart() {
			t.Errorf("%s cannot start here: %v %v", st.Profile.Name, st.Problem, st.Missing)
		}
	}
}
