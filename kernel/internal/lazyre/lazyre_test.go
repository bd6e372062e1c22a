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
