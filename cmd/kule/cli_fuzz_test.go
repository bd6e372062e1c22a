package main

import (
	"strings"
	"testing"
	"time"
)

// FuzzDedupePrefixes: the message is never longer, keeps its last part
// (what happened) and, said twice, is the same.
func FuzzDedupePrefixes(f *testing.F) {
	for _, s := range []string{"policy: policy: a.cedar:2: bad", "a: a: a", ": : ", "commit: x: x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := dedupePrefixes(s)
		if len(got) > len(s) {
			t.Fatalf("%q grew to %q", s, got)
		}
		parts := strings.Split(s, ": ")
		if !strings.HasSuffix(got, parts[len(parts)-1]) {
			t.Fatalf("%q lost its end: %q", s, got)
		}
		if again := dedupePrefixes(got); again != got {
			t.Fatalf("%q: %q then %q", s, got, again)
		}
	})
}

// FuzzOffFlag: a limit's value is off, a duration, or an error; never a
// panic, and off is always none.
func FuzzOffFlag(f *testing.F) {
	for _, s := range []string{"off", "OFF", " none ", "30m", "-1s", "4h", "", "1e9h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d := 5 * time.Second
		v := offFlag(&d, "duration", time.ParseDuration)
		err := v.Set(s)
		if isOff(s) && (err != nil || d != 0) {
			t.Fatalf("%q: %v, %v", s, d, err)
		}
		if err != nil && d != 5*time.Second {
			t.Fatalf("%q failed but changed the value to %v", s, d)
		}
	})
}
