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

func TestParseFault(t *testing.T) {
	for in, want := range map[string]struct {
		name string
		nth  int64
		errn string
	}{
		"stage.write:ENOSPC":   {"stage.write", 0, "no space left on device"},
		"stage.write@3:ENOSPC": {"stage.write", 3, "no space left on device"},
		"journal.staged":       {"journal.staged", 0, "input/output error"},
		"stage.sync@x:EACCES":  {"stage.sync", 0, "permission denied"},
	} {
		name, nth, errn := parseFault(in)
		if name != want.name || nth != want.nth || errn.Error() != want.errn {
			t.Errorf("parseFault(%q) = %q %d %v, want %+v", in, name, nth, errn, want)
		}
	}
}

func FuzzParseFault(f *testing.F) {
	f.Add("stage.write@3:ENOSPC")
	f.Add("a@-1:")
	f.Fuzz(func(t *testing.T, s string) {
		name, nth, errn := parseFault(s)
		if s != "" && (errn == 0 || nth < 0) {
			t.Fatalf("parseFault(%q) = %q %d %v", s, name, nth, errn)
		}
	})
}
