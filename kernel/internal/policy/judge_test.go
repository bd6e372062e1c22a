package policy

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	cedar "github.com/cedar-policy/cedar-go"
	"github.com/google/go-cmp/cmp"

	"github.com/kulehq/kule/kernel/internal/effects"
)

func mustLoad(t testing.TB, home, folder, choice string) *Engine {
	t.Helper()
	e, err := Load(home, folder, choice)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return e
}

var gitTask = TaskInfo{ID: "0badc0de", Agent: "claude", FolderIsGit: true, AgentRunning: true}

type want struct {
	outcome Outcome
	rules   string // comma-separated
}

func judgeOne(t *testing.T, e *Engine, task TaskInfo, r Request) Verdict {
	t.Helper()
	rs := e.Judge(task, []Request{r})
	if len(rs.Verdicts) != 1 {
		t.Fatalf("Judge gave %d verdicts for one request", len(rs.Verdicts))
	}
	return rs.Verdicts[0]
}

func check(t *testing.T, v Verdict, w want) {
	t.Helper()
	got := want{v.Outcome, strings.Join(v.Rules, ",")}
	if got != w {
		t.Errorf("%s: got %v (%s), want %v (%s)", v.Request.Subject(), got.outcome, got.rules, w.outcome, w.rules)
	}
}

func fm(p string) Request { return Request{Action: FileModify, Path: p, Effect: -1} }

// TestBalancedCategories checks every category of the balanced policy, in
// mixed case, nested folders and Windows-style names.
func TestBalancedCategories(t *testing.T) {
	t.Parallel()
	e := mustLoad(t, t.TempDir(), t.TempDir(), Balanced)
	pass := want{Pass, "changes-pass"}
	ask := func(rules string) want { return want{Ask, rules} }
	cases := map[string]struct {
		req  Request
		want want
	}{
		"source edit":                  {fm("src/main.go"), pass},
		"readme":                       {fm("README.md"), pass},
		"notes with manifest-ish word": {fm("docs/package.json.md"), pass},
		"new source file":              {Request{Action: FileCreate, Path: "pkg/new.rs"}, pass},
		"source deleted":               {Request{Action: FileDelete, Path: "old.txt", Count: 1}, pass},
		"source moved":                 {Request{Action: FileMove, Path: "b.go", From: "a.go"}, pass},
		"mode change":                  {Request{Action: FileMode, Path: "run.sh"}, pass},

		"package.json":          {fm("package.json"), ask("manifests-and-lockfiles")},
		"Cargo.toml mixed case": {fm("CARGO.Toml"), ask("manifests-and-lockfiles")},
		"nested go.mod":         {fm("services/api/go.mod"), ask("manifests-and-lockfiles")},
		"windows pyproject":     {fm(`tools\py\PyProject.toml`), ask("manifests-and-lockfiles")},
		"requirements-dev.txt":  {fm("requirements-dev.txt"), ask("manifests-and-lockfiles")},
		"requirements dir":      {fm("requirements/base.txt"), ask("manifests-and-lockfiles")},
		"Gemfile":               {fm("Gemfile"), ask("manifests-and-lockfiles")},
		"csproj":                {fm("src/App/App.CsProj"), ask("manifests-and-lockfiles")},
		"pom.xml":               {fm("pom.xml"), ask("manifests-and-lockfiles")},
		"build.gradle.kts":      {fm("app/build.gradle.kts"), ask("manifests-and-lockfiles")},
		"composer.json":         {fm("composer.json"), ask("manifests-and-lockfiles")},
		"package-lock.json":     {fm("web/package-lock.json"), ask("manifests-and-lockfiles")},
		"yarn.lock":             {fm("yarn.lock"), ask("manifests-and-lockfiles")},
		"pnpm-lock.yaml":        {fm("pnpm-lock.yaml"), ask("manifests-and-lockfiles")},
		"Cargo.lock":            {fm("Cargo.lock"), ask("manifests-and-lockfiles")},
		"go.sum":                {fm("go.sum"), ask("manifests-and-lockfiles")},
		"poetry.lock":           {fm("poetry.lock"), ask("manifests-and-lockfiles")},
		"uv.lock":               {fm("uv.lock"), ask("manifests-and-lockfiles")},
		"Gemfile.lock":          {fm("Gemfile.lock"), ask("manifests-and-lockfiles")},
		"composer.lock":         {fm("composer.lock"), ask("manifests-and-lockfiles")},
		"manifest deleted":      {Request{Action: FileDelete, Path: "package.json", Count: 1}, ask("manifests-and-lockfiles")},
		"manifest moved away":   {Request{Action: FileMove, Path: "old-package.json", From: "package.json"}, ask("manifests-and-lockfiles")},

		"github workflow":         {fm(".github/workflows/ci.yml"), ask("ci")},
		"github workflow windows": {fm(`.GitHub\Workflows\Release.YML`), ask("ci")},
		"nested workflow":         {fm("sub/.github/workflows/x.yml"), ask("ci")},
		"gitlab-ci":               {fm(".gitlab-ci.yml"), ask("ci")},
		"circleci":                {fm(".circleci/config.yml"), ask("ci")},
		"Jenkinsfile":             {fm("JenkinsFile"), ask("ci")},
		"azure pipelines":         {fm("azure-pipelines.yml"), ask("ci")},
		"buildkite":               {fm(".buildkite/pipeline.yml"), ask("ci")},
		"github other file":       {fm(".github/CODEOWNERS"), pass},

		"editorconfig":      {fm(".editorconfig"), ask("editor-config")},
		"vscode settings":   {fm(".vscode/settings.json"), ask("editor-config")},
		"idea":              {fm(".idea/workspace.xml"), ask("editor-config")},
		"vscode tasks":      {fm(".vscode/tasks.json"), ask("editor-config,runs-code")},
		"vscode launch win": {fm(`.VSCode\launch.json`), ask("editor-config,runs-code")},

		"npmrc":             {fm(".npmrc"), ask("runs-code")},
		"yarnrc.yml":        {fm("sub/.yarnrc.yml"), ask("runs-code")},
		"cargo config":      {fm(".cargo/config.toml"), ask("runs-code")},
		"rust-toolchain":    {fm("rust-toolchain.toml"), ask("runs-code")},
		"tool-versions":     {fm(".tool-versions"), ask("runs-code")},
		"envrc":             {fm(".envrc"), ask("runs-code")},
		"husky":             {fm(".husky/pre-commit"), ask("runs-code")},
		"pre-commit-config": {fm(".pre-commit-config.yaml"), ask("runs-code")},
		"lefthook":          {fm("lefthook.yml"), ask("runs-code")},
		"build.rs":          {fm("crates/x/build.rs"), ask("runs-code")},
		"devcontainer":      {fm(".devcontainer/devcontainer.json"), ask("editor-config,runs-code")},

		"CLAUDE.md":            {fm("CLAUDE.md"), ask("agent-instructions")},
		"nested claude.md":     {fm("pkg/Claude.md"), ask("agent-instructions")},
		"AGENTS.md":            {fm("AGENTS.md"), ask("agent-instructions")},
		"GEMINI.md":            {fm("gemini.MD"), ask("agent-instructions")},
		"claude settings":      {fm(".claude/settings.json"), ask("agent-instructions")},
		"codex dir":            {fm(".codex/config.toml"), ask("agent-instructions")},
		"gemini dir":           {fm(`.gemini\settings.json`), ask("agent-instructions")},
		"cursor rules":         {fm(".cursor/rules/x.mdc"), ask("agent-instructions")},
		"mcp.json":             {fm(".mcp.json"), ask("agent-instructions")},
		"copilot instructions": {fm(".github/copilot-instructions.md"), ask("agent-instructions")},
		"vscode mcp":           {fm(".vscode/mcp.json"), ask("agent-instructions,editor-config")},

		"nested repo file":     {fm("vendor/lib/.git/HEAD"), ask("nested-repositories")},
		"nested repo windows":  {fm(`vendor\lib\.GIT\index`), ask("nested-repositories")},
		"gitmodules":           {fm(".gitmodules"), ask("nested-repositories")},
		"nested repo by facts": {Request{Action: FileCreate, Path: "vendor/lib", NestedRepo: true}, ask("nested-repositories")},
		"nested repo's hook":   {Request{Action: FileCreate, Path: "vendor/lib/.git/hooks/post-checkout"}, want{Deny, "git-hooks"}},
		"nested repo's config": {fm("vendor/lib/.git/config"), ask("git-config,nested-repositories")},

		"link created":  {Request{Action: FileLink, Path: "docs/latest", Link: true}, ask("links")},
		"link deleted":  {Request{Action: FileDelete, Path: "docs/latest", Link: true, Count: 1}, pass},
		"kule settings": {fm(".kule/policy.cedar"), ask("kule-settings")},
		"kule deleted":  {Request{Action: FileDelete, Path: ".kule/policy.cedar", Count: 1}, ask("kule-settings")},
		"nested .kule":  {fm("sub/.kule/x"), pass},

		"git hook file":        {Request{Action: FileCreate, Path: ".git/hooks/pre-commit"}, want{Deny, "git-hooks"}},
		"git hook mixed case":  {Request{Action: FileModify, Path: `.Git\Hooks\pre-push`}, want{Deny, "git-hooks"}},
		"git.hook":             {GitRequest(GitHook, ".git/hooks/pre-commit", "hook added"), want{Deny, "git-hooks"}},
		"git.config":           {GitRequest(GitConfig, ".git/config", "remote url changed"), ask("git-config")},
		"git config file":      {fm(".git/config"), ask("git-config")},
		"git internals":        {fm(".git/info/exclude"), ask("git-internals")},
		"git.rewrite":          {GitRequest(GitRewrite, "refs/heads/main", "history rewritten"), ask("history-rewrites")},
		"git.ref fast-forward": {GitRequest(GitRef, "refs/heads/main", "fast-forward"), pass},
		"git.index":            {GitRequest(GitIndex, ".git/index", "staged"), pass},

		"home write": {Request{Action: HomeWrite, Path: ".bashrc"}, ask("home-writes")},

		"unknown host": {NetRequest("example.org", 443), ask("unknown-hosts")},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			check(t, judgeOne(t, e, gitTask, c.req), c.want)
		})
	}
}

// hostsTagged lists the hosts of the embedded host list with a tag (the
// host names live in builtin/hosts.txt alone).
func hostsTagged(tag string) []string {
	var out []string
	for h, e := range knownHosts {
		if e.tags&tagBit(tag) != 0 {
			out = append(out, h)
		}
	}
	slices.Sort(out)
	return out
}

// TestConnections: every package registry of the host list passes on 443
// whatever its case, and waits on another port or under a look-alike name;
// a model API passes only for its own agent while it runs.
func TestConnections(t *testing.T) {
	t.Parallel()
	regs, apis := hostsTagged(TagPackageRegistry), hostsTagged(TagModelAPI)
	if len(regs) < 16 || len(apis) < 3 {
		t.Fatalf("host list: %d registries, %d model APIs", len(regs), len(apis))
	}
	for _, choice := range Choices {
		e := mustLoad(t, t.TempDir(), "", choice)
		for _, h := range regs {
			check(t, judgeOne(t, e, gitTask, NetRequest(strings.ToUpper(h)+".", 443)), want{Pass, "package-registries"})
			check(t, judgeOne(t, e, gitTask, NetRequest(h, 80)), want{Ask, "unknown-hosts"})
			check(t, judgeOne(t, e, gitTask, NetRequest(h+".evil.example", 443)), want{Ask, "unknown-hosts"})
			check(t, judgeOne(t, e, gitTask, NetRequest("evil-"+h, 443)), want{Ask, "unknown-hosts"})
		}
		for _, h := range apis {
			for _, agent := range knownHosts[h].agents {
				running := TaskInfo{ID: "1", Agent: agent, AgentRunning: true}
				check(t, judgeOne(t, e, running, NetRequest(h, 443)), want{Pass, "agent-model-api"})
				idle := running
				idle.AgentRunning = false
				check(t, judgeOne(t, e, idle, NetRequest(h, 443)), want{Ask, "unknown-hosts"})
				other := TaskInfo{ID: "1", Agent: "not-" + agent, AgentRunning: true}
				check(t, judgeOne(t, e, other, NetRequest(h, 443)), want{Ask, "unknown-hosts"})
			}
		}
	}
}

func TestModelAPIOnlyWhileAgentRuns(t *testing.T) {
	t.Parallel()
	e := mustLoad(t, t.TempDir(), "", Balanced)
	// A profile's own model host counts for its agent only.
	prof := TaskInfo{ID: "1", Agent: "mine", AgentRunning: true, ModelHosts: []string{"LLM.Example.com"}}
	check(t, judgeOne(t, e, prof, NetRequest("llm.example.com", 443)), want{Pass, "agent-model-api"})
	check(t, judgeOne(t, e, prof, NetRequest(hostsTagged(TagModelAPI)[0], 443)), want{Ask, "unknown-hosts"})
}

// A profile's local endpoint (host:port) passes for its agent on that port
// alone: another port of the same machine still waits.
func TestModelEndpointIsOnePort(t *testing.T) {
	t.Parallel()
	e := mustLoad(t, t.TempDir(), "", Balanced)
	prof := TaskInfo{ID: "1", Agent: "mine", AgentRunning: true, ModelHosts: []string{"127.0.0.1:11434", "localhost:4000", "[::1]:8080"}}
	check(t, judgeOne(t, e, prof, NetRequest("127.0.0.1", 11434)), want{Pass, "agent-model-api"})
	check(t, judgeOne(t, e, prof, NetRequest("localhost", 4000)), want{Pass, "agent-model-api"})
	check(t, judgeOne(t, e, prof, NetRequest("::1", 8080)), want{Pass, "agent-model-api"})
	check(t, judgeOne(t, e, prof, NetRequest("127.0.0.1", 22)), want{Ask, "unknown-hosts"})
	check(t, judgeOne(t, e, prof, NetRequest("localhost", 11434)), want{Ask, "unknown-hosts"})
	stopped := prof
	stopped.AgentRunning = false
	check(t, judgeOne(t, e, stopped, NetRequest("127.0.0.1", 11434)), want{Ask, "unknown-hosts"})
}

func TestCarefulAsksEveryChange(t *testing.T) {
	t.Parallel()
	e := mustLoad(t, t.TempDir(), "", Careful)
	cases := map[string]struct {
		req  Request
		want want
	}{
		"source edit":  {fm("src/main.go"), want{Ask, "every-change"}},
		"manifest":     {fm("package.json"), want{Ask, "every-change,manifests-and-lockfiles"}},
		"fast-forward": {GitRequest(GitRef, "refs/heads/main", "fast-forward"), want{Ask, "every-change"}},
		"hook":         {GitRequest(GitHook, ".git/hooks/x", ""), want{Deny, "git-hooks"}},
		"registry":     {NetRequest(hostsTagged(TagPackageRegistry)[0], 443), want{Pass, "package-registries"}},
		"unknown host": {NetRequest("example.org", 443), want{Ask, "unknown-hosts"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			check(t, judgeOne(t, e, gitTask, c.req), c.want)
		})
	}
}

func deletes(n int, prefix string) []Request {
	out := make([]Request, n)
	for i := range out {
		out[i] = Request{Action: FileDelete, Path: fmt.Sprintf("%s/f%d.txt", prefix, i), Count: 1}
	}
	return out
}

func moves(n int) []Request {
	out := make([]Request, n)
	for i := range out {
		out[i] = Request{Action: FileMove, Path: fmt.Sprintf("new/f%d.txt", i), From: fmt.Sprintf("old/f%d.txt", i)}
	}
	return out
}

// TestMassDeletes checks the thresholds: more than 200 deletions in a git
// repository, more than 20 outside, a whole directory counting its files,
// and moves never counting.
func TestMassDeletes(t *testing.T) {
	t.Parallel()
	e := mustLoad(t, t.TempDir(), "", Balanced)
	plain := TaskInfo{ID: "1"}
	cases := map[string]struct {
		task TaskInfo
		reqs []Request
		want Outcome
	}{
		"20 outside git":                {plain, deletes(20, "d"), Pass},
		"21 outside git":                {plain, deletes(21, "d"), Ask},
		"200 in git":                    {gitTask, deletes(200, "d"), Pass},
		"201 in git":                    {gitTask, deletes(201, "d"), Ask},
		"20 deletes and 500 moves":      {plain, append(deletes(20, "d"), moves(500)...), Pass},
		"dir of 21 files outside":       {plain, []Request{{Action: FileDelete, Path: "build", Count: 21}}, Ask},
		"dir of 200 files in git":       {gitTask, []Request{{Action: FileDelete, Path: "build", Count: 200}}, Pass},
		"dir of 201 files via effects":  {gitTask, FromEffects([]effects.Effect{{Kind: effects.Delete, Path: "build", Dir: true, Files: 201}}, Facts{}), Ask},
		"moved dir of 5000 via effects": {plain, FromEffects([]effects.Effect{{Kind: effects.Move, Path: "b", From: "a", Dir: true, Files: 5000}}, Facts{}), Pass},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := e.Judge(c.task, c.reqs)
			if len(r.Verdicts) != len(c.reqs) {
				t.Fatalf("%d verdicts for %d requests", len(r.Verdicts), len(c.reqs))
			}
			for _, v := range r.Verdicts {
				if v.Request.Action != FileDelete {
					if v.Outcome != Pass {
						t.Errorf("%s: %v", v, v.Outcome)
					}
					continue
				}
				if v.Outcome != c.want {
					t.Fatalf("%s: got %v, want %v", v, v.Outcome, c.want)
				}
				if c.want == Ask && !slices.Equal(v.Rules, []string{"mass-deletes"}) {
					t.Fatalf("%s: rules %v", v, v.Rules)
				}
				if c.want == Ask && v.Rememberable {
					t.Fatalf("%s: a mass delete must never be remembered", v)
				}
			}
		})
	}
}

func TestFromEffects(t *testing.T) {
	t.Parallel()
	es := []effects.Effect{
		{Kind: effects.Add, Path: "a"},
		{Kind: effects.Modify, Path: "b"},
		{Kind: effects.Delete, Path: "c", Dir: true, Files: 7},
		{Kind: effects.Move, Path: "e", From: "d"},
		{Kind: effects.Mode, Path: "f"},
		{Kind: effects.Link, Path: "g", Target: "/etc/passwd"},
		{Kind: effects.Type, Path: "h", OldType: effects.TypeFile, NewType: effects.TypeLink},
		{Kind: effects.Type, Path: "i", OldType: effects.TypeLink, NewType: effects.TypeFile},
		{Kind: effects.Add, Path: "vendor/x", Dir: true, Files: 3},
	}
	got := FromEffects(es, Facts{NestedRepos: []string{"vendor/x"}})
	wantReqs := []Request{
		{Action: FileCreate, Path: "a", Count: 1, Effect: 0},
		{Action: FileModify, Path: "b", Count: 1, Effect: 1},
		{Action: FileDelete, Path: "c", Count: 7, Effect: 2},
		{Action: FileMove, Path: "e", From: "d", Count: 1, Effect: 3},
		{Action: FileMode, Path: "f", Count: 1, Effect: 4},
		{Action: FileLink, Path: "g", Count: 1, Link: true, Effect: 5},
		{Action: FileLink, Path: "h", Count: 1, Link: true, Effect: 6},
		{Action: FileModify, Path: "i", Count: 1, Effect: 7},
		{Action: FileCreate, Path: "vendor/x", Count: 3, NestedRepo: true, Effect: 8},
	}
	if d := cmp.Diff(wantReqs, got, cmp.AllowUnexported(Request{})); d != "" {
		t.Fatalf("FromEffects (-want +got):\n%s", d)
	}
	if n := deletions(got); n != 7 {
		t.Fatalf("deletions = %d, want 7", n)
	}
}

func TestVerdictString(t *testing.T) {
	t.Parallel()
	e := mustLoad(t, t.TempDir(), "", Balanced)
	r := e.Judge(gitTask, []Request{fm("Cargo.toml"), fm("main.go"), GitRequest(GitHook, ".git/hooks/pre-commit", "")})
	if got, w := r.Verdicts[0].String(), "Cargo.toml · waits for approval (manifests-and-lockfiles)"; got != w {
		t.Errorf("String() = %q, want %q", got, w)
	}
	got := r.Summary()
	wantLines := []string{
		"policy: waits for approval",
		"  Cargo.toml · waits for approval (manifests-and-lockfiles): changes what gets installed or built",
		"policy: denied, never applied",
		"  .git/hooks/pre-commit · denied (git-hooks): a git hook runs code at the next git command",
	}
	if d := cmp.Diff(wantLines, got); d != "" {
		t.Errorf("Summary (-want +got):\n%s", d)
	}
	ok := e.Judge(gitTask, []Request{fm("main.go")}).Summary()
	if d := cmp.Diff([]string{"policy: passes on its own"}, ok); d != "" {
		t.Errorf("Summary (-want +got):\n%s", d)
	}
}

// TestEveryBuiltinForbidIsAnnotated guards the built-in texts: every forbid
// names itself and says ask or deny, and every rule id is listed.
func TestEveryBuiltinForbidIsAnnotated(t *testing.T) {
	t.Parallel()
	for _, choice := range Choices {
		text, err := BuiltinText(choice)
		if err != nil {
			t.Fatal(err)
		}
		list, err := parseFile(choice, []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range list {
			a := p.Annotations()
			if a["id"] == "" {
				t.Errorf("%s:%d: rule without @id", choice, p.Position().Line)
			}
			if p.Effect() == cedar.Forbid {
				if v := a["verdict"]; v != "ask" && v != "deny" {
					t.Errorf("%s:%d (%s): @verdict %q", choice, p.Position().Line, a["id"], v)
				}
			}
		}
		e := mustLoad(t, t.TempDir(), "", choice)
		var ids []string
		for _, r := range e.Rules() {
			ids = append(ids, r.ID)
		}
		for _, id := range []string{"manifests-and-lockfiles", "ci", "editor-config", "runs-code", "agent-instructions",
			"nested-repositories", "links", "git-config", "history-rewrites", "mass-deletes", "git-hooks",
			"unknown-hosts", "package-registries", "agent-model-api"} {
			if !slices.Contains(ids, id) {
				t.Errorf("%s: rule %s is missing", choice, id)
			}
		}
	}
}
