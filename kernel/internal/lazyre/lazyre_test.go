package lazyre

import "testing"

func TestMatchString(t *testing.T) {
	re := New(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	for s, want := range map[string]bool{"go": true, "json-keys": true, "": false, "Go": false, "-x": false} {
		if got := re.MatchString(s); got != want {
			t.Errorf("MatchString(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestBadExpressionPanicsAtFirstUse(t *testing.T) {
	re := New(`(`)
	defer func() {
		if recover() == nil {
			t.Fatal("a pattern that does not compile matched without a panic")
		}
	}()
	re.MatchString("x")
}

// The other methods answer as the regexp package's own do, compiling on
// their first use.
func TestMethodsAnswerAsRegexpDoes(t *testing.T) {
	if got := string(New(`^[a-z]+`).Find([]byte("abc=1"))); got != "abc" {
		t.Errorf("Find = %q, want abc", got)
	}
	if got := New(`^[a-z]+`).Find([]byte("=1")); got != nil {
		t.Errorf("Find of no match = %q, want nil", got)
	}
	if got := New(`v(\d+)\.(\d+)`).FindStringSubmatch("go v1.26"); len(got) != 3 || got[1] != "1" || got[2] != "26" {
		t.Errorf("FindStringSubmatch = %q, want [v1.26 1 26]", got)
	}
	if got := New(`\s+`).ReplaceAllString("a  b\tc", " "); got != "a b c" {
		t.Errorf("ReplaceAllString = %q, want %q", got, "a b c")
	}
}
