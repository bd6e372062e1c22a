package crashpoint

import "testing"

func TestHookSeesEveryStepAndIsRestored(t *testing.T) {
	var seen []string
	restore := SetHook(func(step string) { seen = append(seen, step) })
	Hit("commit.judged")
	Hit("commit.planned")
	restore()
	Hit("commit.staged")
	if len(seen) != 2 || seen[0] != "commit.judged" || seen[1] != "commit.planned" {
		t.Fatalf("hook saw %v", seen)
	}
}
