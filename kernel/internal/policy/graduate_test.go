package policy

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// TestGraduatedPermitsNeverLiftWhatNeverGraduates: even a graduated
// permit written by hand for a whole folder does not let through a mass
// delete, a history rewrite or a change under .kule/, and Graduate itself
// refuses the rules that would let anything through.
func TestGraduatedPermitsNeverLiftWhatNeverGraduates(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	folder := "/work/f"
	for _, rule := range []string{"mass-deletes", "history-rewrites", "agent-instructions", "kule-settings"} {
		if _, err := Graduate(home, folder, rule, "", false, "g-"+rule); err != nil {
			t.Fatal(err)
		}
	}
	for _, rule := range []string{"unknown-hosts", "home-writes", NoRule, "every-change"} {
		if _, err := Graduate(home, folder, rule, "", false, "g-"+rule); !errors.Is(err, ErrPolicy) {
			t.Errorf("%s graduated for a whole folder: %v", rule, err)
		}
	}
	e := mustLoad(t, home, folder, Balanced)
	if !e.HasGraduated() {
		t.Fatal("no graduated rule read back")
	}
	reqs := []Request{
		{Action: FileDelete, Path: "a.txt", Count: 300, Effect: 0},
		{Action: GitRewrite, Path: ".git/refs/heads/main", Effect: -1},
		fm(".kule/policy.cedar"),
		fm("AGENTS.md"),
	}
	r := e.Judge(gitTask, reqs)
	for i, v := range r.Verdicts[:3] {
		if v.Outcome == Pass {
			t.Errorf("%d: %s passed under a graduated rule", i, v)
		}
	}
	if r.Verdicts[3].Outcome != Pass {
		t.Errorf("AGENTS.md should pass under graduated agent-instructions: %s", r.Verdicts[3])
	}
	// Without the graduated permits (untrusted input), it asks again.
	if v := e.WithoutGraduated().Judge(gitTask, reqs[3:]).Verdicts[0]; v.Outcome != Ask {
		t.Errorf("untrusted: %s", v)
	}
	// Withdraw takes it back by its id, once.
	if _, ok, err := Withdraw(home, "g-agent-instructions"); !ok || err != nil {
		t.Fatalf("withdraw: %v %v", ok, err)
	}
	if _, ok, _ := Withdraw(home, "g-agent-instructions"); ok {
		t.Fatal("withdrawn twice")
	}
	b, _ := os.ReadFile(RulesPath(home))
	if strings.Contains(string(b), "g-agent-instructions") {
		t.Fatalf("still in rules.cedar:\n%s", b)
	}
}

// FuzzRules feeds arbitrary text as rules.cedar: Load either refuses it
// or answers every request, and a graduated rule it reads never lets a
// change under .kule/ through.
func FuzzRules(f *testing.F) {
	f.Add("@rule(\"ci\")\n@folder(\"/f\")\n@graduated(\"g1\")\npermit (principal, action, resource);")
	f.Add("@rule(\"unknown-hosts\")\n@folder(\"/f\")\n@graduated(\"g1\")\npermit (principal, action, resource);")
	f.Add("@rule(\"ci\")\n@folder(\"/f\")\npermit (principal, action, resource == Kule::Path::\".github/x.yml\");")
	reqs := []Request{fm(".kule/policy.cedar"), fm(".github/workflows/ci.yml"), NetRequest("example.org", 443)}
	f.Fuzz(func(t *testing.T, text string) {
		home := t.TempDir()
		if err := os.WriteFile(RulesPath(home), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		e, err := Load(home, "/f", Balanced)
		if err != nil {
			return
		}
		r := e.Judge(gitTask, reqs)
		checkRuling(t, reqs, r)
		if r.Verdicts[0].Outcome == Pass {
			t.Fatalf("a rule in rules.cedar let .kule/ through: %q", text)
		}
	})
}
