package policy

import (
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

// checkRuling asserts what every ruling must hold: one verdict per request,
// in order, each with a known outcome and at least one rule.
func checkRuling(t *testing.T, reqs []Request, r Ruling) {
	t.Helper()
	if len(r.Verdicts) != len(reqs) {
		t.Fatalf("%d verdicts for %d requests", len(r.Verdicts), len(reqs))
	}
	for i, v := range r.Verdicts {
		if v.Request.Action != reqs[i].Action || v.Request.Path != reqs[i].Path || v.Request.Host != reqs[i].Host {
			t.Fatalf("verdict %d is for %v, not %v", i, v.Request, reqs[i])
		}
		if v.Outcome != Pass && v.Outcome != Ask && v.Outcome != Deny {
			t.Fatalf("verdict %d: outcome %d", i, v.Outcome)
		}
		if len(v.Rules) == 0 {
			t.Fatalf("verdict %d (%s) names no rule", i, v)
		}
		if v.Outcome != Ask && v.Rememberable {
			t.Fatalf("verdict %d (%s): only an ask can be remembered", i, v)
		}
		_ = v.String()
	}
	_ = r.Summary()
}

// FuzzJudge feeds arbitrary paths and host names through the entity
// builder and the evaluator of both built-in policies.
func FuzzJudge(f *testing.F) {
	f.Add("src/main.go", "old/main.go", "Registry.Example.org", 443, uint8(1))
	f.Add(`A\B\.GIT\hooks\x`, "", "[::1]", 0, uint8(8))
	f.Add("../../etc/passwd", "/abs", "", -1, uint8(3))
	engines := map[string]*Engine{}
	for _, c := range Choices {
		engines[c] = mustLoad(f, f.TempDir(), "", c)
	}
	f.Fuzz(func(t *testing.T, path, from, host string, port int, act uint8) {
		a := Actions[int(act)%len(Actions)]
		reqs := []Request{
			{Action: a, Path: path, From: from, Count: int(act), Effect: -1},
			{Action: FileMove, Path: path, From: from, Effect: -1},
			{Action: FileDelete, Path: from, Count: port, Effect: -1},
			NetRequest(host, port),
			GitRequest(GitRef, path, host),
			{Action: Action(path), Path: path, Effect: -1},
		}
		for _, e := range engines {
			for _, task := range []TaskInfo{{ID: host, Agent: path}, gitTask} {
				checkRuling(t, reqs, e.Judge(task, reqs))
			}
		}
		// Case and separators never change what a path is.
		if isASCII(path) {
			base := classifyPath(path).tags
			for _, v := range []string{strings.ToUpper(path), strings.ToLower(path), strings.ReplaceAll(path, "/", `\`)} {
				if got := classifyPath(v).tags; got != base {
					t.Fatalf("%q has tags %v but %q has %v", path, base.Names(), v, got.Names())
				}
			}
		}
		// A hook is denied however its path is written.
		if classifyPath(path).tags&bGitHook != 0 {
			for _, e := range engines {
				if v := e.Judge(gitTask, []Request{{Action: FileModify, Path: path}}).Verdicts[0]; v.Outcome != Deny {
					t.Fatalf("%q is a git hook but %s", path, v)
				}
			}
		}
	})
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// FuzzRemember checks that whatever path or host is remembered reads back
// exactly: rules.cedar never ends up in a state that blocks every commit.
func FuzzRemember(f *testing.F) {
	f.Add("package.json", "api.example.com", 443)
	f.Add("a\"b\\c\n\x00\xff.json", "h\"ost", 1)
	f.Add("Cargo.toml", "💥.example", 65535)
	e := mustLoad(f, f.TempDir(), "", Balanced)
	f.Fuzz(func(t *testing.T, path, host string, port int) {
		home := t.TempDir()
		folder := "/folder"
		reqs := []Request{{Action: FileModify, Path: path + "/package.json"}, NetRequest(host, port)}
		r := e.Judge(gitTask, reqs)
		_, notKept, err := Remember(home, folder, r.Verdicts)
		if err != nil {
			t.Fatalf("Remember: %v", err)
		}
		again, err := Load(home, folder, Balanced)
		if err != nil {
			b, _ := os.ReadFile(RulesPath(home))
			t.Fatalf("after Remember, Load: %v\n%s", err, b)
		}
		r2 := again.Judge(gitTask, reqs)
		checkRuling(t, reqs, r2)
		for i, v := range r.Verdicts {
			if len(notKept) > 0 {
				if utf8.ValidString(path) && utf8.ValidString(host) {
					t.Fatalf("could not keep %q though every name is UTF-8", notKept)
				}
				continue
			}
			if v.Rememberable && r2.Verdicts[i].Outcome != Pass {
				t.Fatalf("remembered %s, but it still %s", v, r2.Verdicts[i].Outcome)
			}
		}
	})
}

// FuzzLoad feeds arbitrary text as a person's policy: Load either refuses
// it with an error or gives an engine that answers every request once.
func FuzzLoad(f *testing.F) {
	f.Add("permit (principal, action, resource);")
	f.Add("@id(\"x\")\n@verdict(\"ask\")\nforbid (principal, action, resource is Kule::Path) when { resource.tags.contains(\"ci\") };")
	f.Add("forbid (principal, action == Kule::Action::\"net.connect\", resource) when { resource.port > 1024 };")
	f.Add("permit (principal, action, resource) when { context.deletions / 0 == 1 };")
	reqs := []Request{fm("a/b.go"), NetRequest("example.org", 443), {Action: FileDelete, Path: "x", Count: 300}}
	f.Fuzz(func(t *testing.T, text string) {
		home := t.TempDir()
		if err := os.WriteFile(PersonPath(home), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		e, err := Load(home, "", "")
		if err != nil {
			return
		}
		checkRuling(t, reqs, e.Judge(gitTask, reqs))
	})
}
