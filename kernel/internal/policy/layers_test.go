package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kulehq/kule/kernel/internal/effects"
)

func write(t *testing.T, p, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestPersonPolicyReplacesBuiltins(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	write(t, PersonPath(home), `
@id("mine")
permit (principal, action, resource);

@id("no-env-files")
@verdict("deny")
forbid (principal, action, resource is Kule::Path) when { resource.ext == "env" };
`)
	e := mustLoad(t, home, t.TempDir(), Careful)
	if e.Choice() != "" {
		t.Errorf("Choice = %q, want none: the person's policy replaces the built-ins", e.Choice())
	}
	check(t, judgeOne(t, e, gitTask, fm("package.json")), want{Pass, "mine"})
	check(t, judgeOne(t, e, gitTask, fm("config/prod.ENV")), want{Deny, "no-env-files"})
	// The person's policy holds no git-hooks rule: it replaced them all.
	check(t, judgeOne(t, e, gitTask, GitRequest(GitHook, ".git/hooks/x", "")), want{Pass, "mine"})
	var layers []string
	for _, r := range e.Rules() {
		layers = append(layers, r.ID+"@"+string(r.Layer))
	}
	if got, w := strings.Join(layers, " "), "mine@your policy.cedar no-env-files@your policy.cedar"; got != w {
		t.Errorf("Rules = %s, want %s", got, w)
	}
}

func TestPersonPolicyWithoutPermitAsks(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	write(t, PersonPath(home), `
@id("only-docs")
permit (principal, action, resource is Kule::Path) when { resource.ext == "md" };
`)
	e := mustLoad(t, home, "", "")
	check(t, judgeOne(t, e, gitTask, fm("a.md")), want{Pass, "only-docs"})
	v := judgeOne(t, e, gitTask, fm("a.go"))
	check(t, v, want{Ask, NoRule})
	if !v.Rememberable {
		t.Error("an approval of what no rule lets pass should be rememberable")
	}
}

func TestBrokenPolicyNamesFileAndLine(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		text     string
		where    string // "person" or "folder"
		line     string
		sentinel error
	}{
		"does not parse":                  {"@id(\"a\")\npermit (principal, action, resource);\n\nforbid (principal, action resource);\n", "person", ":4:", ErrPolicy},
		"unknown attribute":               {"permit (principal, action, resource);\n@id(\"x\")\nforbid (principal, action == Kule::Action::\"file.modify\", resource)\n  when { resource.port == 1 };\n", "person", ":2:", ErrPolicy},
		"attribute of the wrong resource": {"\n\nforbid (principal, action, resource) when { resource.name == \"x\" };\n", "folder", ":3:", ErrPolicy},
		"unknown action":                  {"forbid (principal, action == Kule::Action::\"file.eat\", resource);\n", "folder", ":1:", ErrPolicy},
		"bad verdict":                     {"\n@verdict(\"maybe\")\nforbid (principal, action, resource);\n", "person", ":2:", ErrPolicy},
		"permit in folder":                {"@id(\"x\")\nforbid (principal, action, resource is Kule::Path) when { resource.ext == \"pem\" };\n\n@id(\"let-me\")\npermit (principal, action, resource);\n", "folder", ":4:", ErrFolderPermit},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			home, folder := t.TempDir(), t.TempDir()
			file := PersonPath(home)
			if c.where == "folder" {
				file = FolderPath(folder)
			}
			write(t, file, c.text)
			e, err := Load(home, folder, "")
			if err == nil {
				t.Fatalf("Load gave an engine with %d rules; want an error", len(e.Rules()))
			}
			if !errors.Is(err, c.sentinel) {
				t.Errorf("error %v is not %v", err, c.sentinel)
			}
			if !strings.Contains(err.Error(), file+c.line) {
				t.Errorf("error %q does not name %s%s", err, file, c.line)
			}
		})
	}
}

func TestFolderPolicyAddsForbids(t *testing.T) {
	t.Parallel()
	home, folder := t.TempDir(), t.TempDir()
	write(t, FolderPath(folder), `
@id("no-keys")
@verdict("deny")
forbid (principal, action, resource is Kule::Path) when { resource.ext == "pem" };

@id("schema-waits")
@verdict("ask")
forbid (principal, action, resource is Kule::Path) when { resource.dir == "db/migrations" };

// A forbid that does not say is a deny, as in Cedar.
@id("no-vendor")
forbid (principal, action, resource is Kule::Path) when { resource.dir like "vendor*" };
`)
	e := mustLoad(t, home, folder, "")
	check(t, judgeOne(t, e, gitTask, fm("certs/server.PEM")), want{Deny, "no-keys"})
	check(t, judgeOne(t, e, gitTask, fm("db/migrations/001.sql")), want{Ask, "schema-waits"})
	check(t, judgeOne(t, e, gitTask, fm("vendor/x.go")), want{Deny, "no-vendor"})
	check(t, judgeOne(t, e, gitTask, fm("main.go")), want{Pass, "changes-pass"})
	// A folder's ask rule is never remembered: the folder's word stands.
	if v := judgeOne(t, e, gitTask, fm("db/migrations/001.sql")); v.Rememberable {
		t.Error("a folder's forbid must not be rememberable")
	}
}

func TestFolderPolicyMustBeAFile(t *testing.T) {
	t.Parallel()
	home, folder := t.TempDir(), t.TempDir()
	write(t, filepath.Join(folder, "elsewhere.cedar"), "permit (principal, action, resource);\n")
	if err := os.MkdirAll(filepath.Join(folder, ".kule"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../elsewhere.cedar", FolderPath(folder)); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(home, folder, ""); err == nil || !strings.Contains(err.Error(), FolderPath(folder)) {
		t.Fatalf("a linked .kule/policy.cedar: err = %v, want an error naming it", err)
	}
}

func TestRememberedApprovals(t *testing.T) {
	t.Parallel()
	home, folder, other := t.TempDir(), t.TempDir(), t.TempDir()
	e := mustLoad(t, home, folder, "")
	reqs := []Request{fm("package.json"), fm(".github/workflows/ci.yml"), NetRequest("api.example.com", 443),
		fm("main.go"), GitRequest(GitHook, ".git/hooks/x", ""), GitRequest(GitRewrite, "refs/heads/main", ""),
		fm(".kule/policy.cedar"), {Action: FileLink, Path: "l", Link: true}}
	r := e.Judge(gitTask, reqs)
	added, _, err := Remember(home, folder, r.Verdicts)
	if err != nil {
		t.Fatal(err)
	}
	var subjects []string
	for _, a := range added {
		subjects = append(subjects, a.Subject+"="+a.Rule.For)
	}
	if got, w := strings.Join(subjects, " "), "package.json=manifests-and-lockfiles .github/workflows/ci.yml=ci api.example.com:443=unknown-hosts"; got != w {
		t.Fatalf("remembered %s, want %s (never a deny, a history rewrite, a link or .kule/)", got, w)
	}
	// Remembering again adds nothing.
	if again, _, err := Remember(home, folder, r.Verdicts); err != nil || len(again) != 0 {
		t.Fatalf("Remember again: %v, %v", again, err)
	}

	e = mustLoad(t, home, folder, "")
	check(t, judgeOne(t, e, gitTask, fm("package.json")), want{Pass, "manifests-and-lockfiles"})
	check(t, judgeOne(t, e, gitTask, fm(`.github\workflows\ci.yml`)), want{Pass, "ci"})
	check(t, judgeOne(t, e, gitTask, NetRequest("API.example.com", 443)), want{Pass, "unknown-hosts"})
	check(t, judgeOne(t, e, gitTask, NetRequest("api.example.com", 8443)), want{Ask, "unknown-hosts"})
	check(t, judgeOne(t, e, gitTask, fm("web/package.json")), want{Ask, "manifests-and-lockfiles"})
	check(t, judgeOne(t, e, gitTask, GitRequest(GitRewrite, "refs/heads/main", "")), want{Ask, "history-rewrites"})

	// Another folder does not see them.
	o := mustLoad(t, home, other, "")
	check(t, judgeOne(t, o, gitTask, fm("package.json")), want{Ask, "manifests-and-lockfiles"})

	// Careful asks for every change: the remembered manifest rule lifts only
	// its own rule.
	c := mustLoad(t, home, folder, Careful)
	check(t, judgeOne(t, c, gitTask, fm("package.json")), want{Ask, "every-change"})
}

func TestRepositoryForbidBeatsRememberedPermit(t *testing.T) {
	t.Parallel()
	home, folder := t.TempDir(), t.TempDir()
	e := mustLoad(t, home, folder, "")
	if _, _, err := Remember(home, folder, e.Judge(gitTask, []Request{fm("package.json")}).Verdicts); err != nil {
		t.Fatal(err)
	}
	check(t, judgeOne(t, mustLoad(t, home, folder, ""), gitTask, fm("package.json")), want{Pass, "manifests-and-lockfiles"})
	write(t, FolderPath(folder), `
@id("manifests-by-review")
@verdict("ask")
forbid (principal, action, resource is Kule::Path) when { resource.tags.contains("manifest") };
`)
	check(t, judgeOne(t, mustLoad(t, home, folder, ""), gitTask, fm("package.json")), want{Ask, "manifests-by-review"})
}

func TestHandWrittenRememberedRulesNeverLiftDenials(t *testing.T) {
	t.Parallel()
	home, folder := t.TempDir(), t.TempDir()
	abs, _ := filepath.Abs(folder)
	rule := func(r, res string) string {
		return "@rule(\"" + r + "\")\n@folder(\"" + abs + "\")\npermit (principal, action, resource == " + res + ");\n"
	}
	write(t, RulesPath(home), rule("git-hooks", `Kule::Path::".git/hooks/pre-commit"`)+
		rule("kule-settings", `Kule::Path::".kule/policy.cedar"`)+
		rule("history-rewrites", `Kule::Path::"refs/heads/main"`)+
		rule("mass-deletes", `Kule::Path::"d/f1.txt"`))
	e := mustLoad(t, home, folder, "")
	check(t, judgeOne(t, e, gitTask, Request{Action: FileCreate, Path: ".git/hooks/pre-commit"}), want{Deny, "git-hooks"})
	check(t, judgeOne(t, e, gitTask, fm(".kule/policy.cedar")), want{Ask, "kule-settings"})
	check(t, judgeOne(t, e, gitTask, GitRequest(GitRewrite, "refs/heads/main", "")), want{Ask, "history-rewrites"})
	r := e.Judge(TaskInfo{ID: "x"}, deletes(30, "d"))
	check(t, r.Verdicts[1], want{Ask, "mass-deletes"})
}

func TestRememberedFileMustBeNarrowPermits(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	write(t, RulesPath(home), "@rule(\"ci\")\n@folder(\"/x\")\npermit (principal, action, resource);\n")
	if _, err := Load(home, "/x", ""); err == nil || !strings.Contains(err.Error(), RulesPath(home)+":1:") {
		t.Fatalf("a broad remembered permit: err = %v, want one naming %s:1", err, RulesPath(home))
	}
	write(t, RulesPath(home), "\n@rule(\"ci\")\n@folder(\"/x\")\nforbid (principal, action, resource == Kule::Path::\"a\");\n")
	if _, err := Load(home, "/x", ""); err == nil || !strings.Contains(err.Error(), RulesPath(home)+":2:") {
		t.Fatalf("a remembered forbid: err = %v, want one naming %s:2", err, RulesPath(home))
	}
}

func TestForget(t *testing.T) {
	t.Parallel()
	home, folder := t.TempDir(), t.TempDir()
	for _, h := range []string{"a.example:443", "b.example:443", "c.example:443"} {
		if _, err := AllowHost(home, folder, h); err != nil {
			t.Fatal(err)
		}
	}
	gone, err := Forget(home, 2)
	if err != nil {
		t.Fatal(err)
	}
	if gone.Subject != "b.example:443" {
		t.Errorf("forgot %s, want b.example:443", gone.Subject)
	}
	rs, err := ReadRemembered(home)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rs {
		got = append(got, r.String())
	}
	abs, _ := filepath.Abs(folder)
	w := []string{"1. a.example:443 · lets unknown-hosts through in " + abs, "2. c.example:443 · lets unknown-hosts through in " + abs}
	if strings.Join(got, "\n") != strings.Join(w, "\n") {
		t.Errorf("after forget:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(w, "\n"))
	}
	if _, err := Forget(home, 3); !errors.Is(err, ErrNoSuchRule) {
		t.Errorf("Forget(3) of 2: %v, want ErrNoSuchRule", err)
	}
	e := mustLoad(t, home, folder, "")
	check(t, judgeOne(t, e, gitTask, NetRequest("b.example", 443)), want{Ask, "unknown-hosts"})
	check(t, judgeOne(t, e, gitTask, NetRequest("c.example", 443)), want{Pass, "unknown-hosts"})
}

// TestForgetIfMovedNumber: a page listed a.example as number 1; meanwhile
// number 1 was forgotten elsewhere, and c.example moved into its place. A
// forget of "number 1, which is a.example" leaves c.example remembered;
// without the check under the lock it would have been forgotten.
func TestForgetIfMovedNumber(t *testing.T) {
	t.Parallel()
	for _, checked := range []bool{true, false} {
		home, folder := t.TempDir(), t.TempDir()
		for _, h := range []string{"a.example:443", "c.example:443"} {
			if _, err := AllowHost(home, folder, h); err != nil {
				t.Fatal(err)
			}
		}
		shown, err := ReadRemembered(home)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Forget(home, 1); err != nil { // another window's forget
			t.Fatal(err)
		}
		is := func(r Remembered) bool { return r.Subject == shown[0].Subject }
		if !checked {
			is = nil
		}
		_, err = ForgetIf(home, 1, is)
		rs, _ := ReadRemembered(home)
		if checked {
			if !errors.Is(err, ErrRuleMoved) || len(rs) != 1 || rs[0].Subject != "c.example:443" {
				t.Fatalf("ForgetIf of a moved number: %v, rules left %v; want ErrRuleMoved and c.example kept", err, rs)
			}
			continue
		}
		if err != nil || len(rs) != 0 {
			t.Fatalf("without the check the wrong rule should go: %v, rules left %v", err, rs)
		}
	}
}

func TestWouldLet(t *testing.T) {
	t.Parallel()
	home, folder, other := t.TempDir(), t.TempDir(), t.TempDir()
	task := func(id, folder, lines string) {
		write(t, filepath.Join(home, "tasks", id, "task.json"), `{"id":"`+id+`","folder":"`+folder+`"}`)
		write(t, filepath.Join(home, "tasks", id, "network.jsonl"), lines)
	}
	task("aaaaaaaa", folder, `{"time":"2026-11-01T10:00:00Z","host":"api.example.com","port":443,"verdict":"ask","rule":"unknown-hosts"}
{"time":"2026-11-01T10:00:01Z","host":"api.example.com","port":443,"verdict":"pass"}
not json
{"time":"2026-11-01T10:00:02Z","host":"API.example.com","port":443,"verdict":"deny"}
{"time":"2026-11-01T10:00:03Z","host":"api.example.com","port":80,"verdict":"ask"}
`)
	task("bbbbbbbb", other, `{"time":"2026-11-02T10:00:00Z","host":"api.example.com","port":443,"verdict":"ask"}`+"\n")
	got, err := WouldLet(home, folder, "api.example.com:443")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Task != "aaaaaaaa" || got[0].Count != 2 || got[0].First != "2026-11-01T10:00:00Z" || got[0].Last != "2026-11-01T10:00:02Z" {
		t.Fatalf("WouldLet = %+v", got)
	}
	all, err := WouldLet(home, "", "api.example.com:443")
	if err != nil || len(all) != 2 {
		t.Fatalf("WouldLet for every folder = %+v, %v", all, err)
	}
	if _, err := WouldLet(home, folder, "api.example.com"); !errors.Is(err, ErrBadHost) {
		t.Fatalf("no port: %v", err)
	}
}

// TestFailingRuleStops: a forbid that fails to evaluate (here an overflow)
// stops what it would judge, with its own verdict; a permit that fails lets
// nothing through.
func TestFailingRuleStops(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	write(t, PersonPath(home), `
@id("all")
permit (principal, action, resource);

@id("overflowing")
@verdict("ask")
forbid (principal, action == Kule::Action::"file.delete", resource)
when { context.deletions + 9223372036854775807 > 0 };
`)
	e := mustLoad(t, home, "", "")
	r := e.Judge(gitTask, []Request{{Action: FileDelete, Path: "a", Count: 1}, fm("b")})
	check(t, r.Verdicts[0], want{Ask, "overflowing"})
	check(t, r.Verdicts[1], want{Pass, "all"})

	write(t, PersonPath(home), `
@id("overflowing-permit")
permit (principal, action, resource) when { context.deletions + 9223372036854775807 > 0 };
`)
	e = mustLoad(t, home, "", "")
	r = e.Judge(gitTask, []Request{{Action: FileDelete, Path: "a", Count: 1}})
	check(t, r.Verdicts[0], want{Ask, NoRule})
	check(t, e.Judge(gitTask, []Request{{Action: "file.eat", Path: "a"}}).Verdicts[0], want{Deny, "unknown-action"})
}

func TestFindNestedRepos(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, d := range []string{".git", "vendor/lib/.git", "third/party/x/.git", "plain/dir"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	es := []effects.Effect{
		{Kind: effects.Modify, Path: "vendor/lib/src/a.c"},
		{Kind: effects.Add, Path: "third", Dir: true, Files: 10},
		{Kind: effects.Modify, Path: "plain/dir/x"},
		{Kind: effects.Modify, Path: "top.txt"},
	}
	got := FindNestedRepos(root, es)
	if strings.Join(got, " ") != "third/party/x vendor/lib" {
		t.Fatalf("FindNestedRepos = %q", got)
	}
	e := mustLoad(t, t.TempDir(), "", Balanced)
	r := e.Judge(gitTask, FromEffects(es, Facts{NestedRepos: got}))
	for i, w := range []Outcome{Ask, Ask, Pass, Pass} {
		if r.Verdicts[i].Outcome != w {
			t.Errorf("%s: want %v", r.Verdicts[i], w)
		}
	}
}

// TestWholeDirectories: a directory added, moved or deleted whole is one
// effect; what is below it is judged by its names all the same.
func TestWholeDirectories(t *testing.T) {
	t.Parallel()
	copyDir, folder := t.TempDir(), t.TempDir()
	for _, p := range []string{".github/workflows/evil.yml", "tools/a/package.json", "docs/x/readme.md", "moved/.vscode/tasks.json"} {
		write(t, filepath.Join(copyDir, p), "x")
	}
	for _, p := range []string{"gone/.husky/pre-commit", "gone/readme.md", "old/plain.txt"} {
		write(t, filepath.Join(folder, p), "x")
	}
	es := []effects.Effect{
		{Kind: effects.Add, Path: ".github", Dir: true, Files: 1},
		{Kind: effects.Add, Path: "tools", Dir: true, Files: 1},
		{Kind: effects.Add, Path: "docs", Dir: true, Files: 1},
		{Kind: effects.Delete, Path: "gone", Dir: true, Files: 2},
		{Kind: effects.Move, Path: "moved", From: "old", Dir: true, Files: 1},
	}
	reqs := FromEffects(es, GatherFacts(copyDir, folder, es))
	e := mustLoad(t, t.TempDir(), "", Balanced)
	r := e.Judge(gitTask, reqs)
	wants := []want{
		{Ask, "ci"},
		{Ask, "manifests-and-lockfiles"},
		{Pass, "changes-pass"},
		{Ask, "runs-code"},
		{Ask, "editor-config,runs-code"},
	}
	for i, w := range wants {
		check(t, r.Verdicts[i], w)
	}
}

// TestRememberedNamesCannotInjectRules: a path an agent chose is written
// into rules.cedar; however it is spelled it stays one narrow rule.
func TestRememberedNamesCannotInjectRules(t *testing.T) {
	t.Parallel()
	home, folder := t.TempDir(), t.TempDir()
	evil := "x\"); permit (principal, action, resource);\n// \"/package.json"
	e := mustLoad(t, home, folder, "")
	r := e.Judge(gitTask, []Request{fm(evil), NetRequest("h\"); permit (principal, action, resource); //", 443)})
	if _, _, err := Remember(home, folder, r.Verdicts); err != nil {
		t.Fatal(err)
	}
	rs, err := ReadRemembered(home)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 {
		t.Fatalf("%d remembered rules, want 2", len(rs))
	}
	e = mustLoad(t, home, folder, "")
	check(t, judgeOne(t, e, gitTask, fm(evil)), want{Pass, "manifests-and-lockfiles"})
	check(t, judgeOne(t, e, gitTask, fm("package.json")), want{Ask, "manifests-and-lockfiles"})
	check(t, judgeOne(t, e, gitTask, NetRequest("example.org", 443)), want{Ask, "unknown-hosts"})
}

// A load parses the built-ins without validating them (it is the hot path
// of every command); this is where they are checked against the schema, so
// a rule that names an attribute the schema lacks fails here.
func TestBuiltinsValidate(t *testing.T) {
	files, err := builtinFS.ReadDir("builtin")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if !strings.HasSuffix(f.Name(), ".cedar") {
			continue
		}
		src, err := builtinFS.ReadFile("builtin/" + f.Name())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := parseFile(f.Name(), src); err != nil {
			t.Errorf("built-in %s: %v", f.Name(), err)
		}
		n++
	}
	if n < 3 {
		t.Fatalf("found %d built-in policy files, want common, balanced and careful", n)
	}
	// The same check refuses a rule about an attribute the schema lacks.
	if _, err := parseFile("bad.cedar", []byte(`forbid (principal, action, resource is Kule::Path) when { resource.nosuch == 1 };`)); err == nil {
		t.Fatal("a rule naming an attribute the schema lacks validated")
	}
}

// BuiltinOnly lets a caller put off a load that can only read the
// built-ins; any file of the person's or the folder's makes it false.
func TestBuiltinOnly(t *testing.T) {
	home, folder := t.TempDir(), t.TempDir()
	if !BuiltinOnly(home, folder, "") || !BuiltinOnly(home, folder, Careful) {
		t.Fatal("no files: want built-ins only")
	}
	if BuiltinOnly(home, folder, "lenient") {
		t.Error("a choice Kule does not have: its load fails, so it must not be put off")
	}
	for _, p := range []string{PersonPath(home), RulesPath(home), FolderPath(folder)} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("broken"), 0o644); err != nil {
			t.Fatal(err)
		}
		if BuiltinOnly(home, folder, "") {
			t.Errorf("%s is there: want false", p)
		}
		os.Remove(p)
	}
}
