package daemon

import (
	"encoding/json"
	"testing"

	"github.com/kulehq/kule/kernel"
)

// TestVerdictWordsAreTheKernels: the words the app's JSON carries for a
// verdict are the kernel's own spelling of its Outcome, and a path's
// ruling is the most severe verdict about it.
func TestVerdictWordsAreTheKernels(t *testing.T) {
	t.Parallel()
	for o, want := range map[kernel.Outcome]string{kernel.OutcomePass: "pass", kernel.OutcomeAsk: "ask", kernel.OutcomeDeny: "deny"} {
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		if got := word(o); got != want || `"`+got+`"` != string(b) {
			t.Errorf("word(%v) = %q, the kernel's JSON %s; want both %q", o, got, b, want)
		}
	}
	j := &kernel.Judgement{Pending: []kernel.Effect{{Path: "go.mod"}, {Path: "README.md"}, {Path: "unjudged.txt"}}}
	for _, v := range []struct {
		effect int
		o      kernel.Outcome
	}{{0, kernel.OutcomeAsk}, {0, kernel.OutcomePass}, {1, kernel.OutcomePass}, {1, kernel.OutcomeDeny}, {1, kernel.OutcomeAsk}} {
		var vd kernel.Verdict
		vd.Request.Effect, vd.Outcome = v.effect, v.o
		j.Ruling.Verdicts = append(j.Ruling.Verdicts, vd)
	}
	got := rulingsOf(j)
	want := map[string]kernel.Outcome{"go.mod": kernel.OutcomeAsk, "README.md": kernel.OutcomeDeny, "unjudged.txt": kernel.OutcomeDeny}
	for p, o := range want {
		if got[p].Verdict != o {
			t.Errorf("%s: ruling %v, want %v (the most severe; none at all is deny)", p, got[p].Verdict, o)
		}
	}
}
