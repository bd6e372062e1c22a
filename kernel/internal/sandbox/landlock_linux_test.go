//go:build linux

package sandbox

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/kulehq/kule/kernel/internal/runner"
)

// The helper makes the command's Landlock domain from the rules the plan
// hands it, and from nothing else. Run in the exec stage (no namespaces, so
// no mounts: Landlock alone stands between the command and the host's
// files), a folder outside the task is refused; handed a rule for it, the
// same command writes there; handed the rules without the copy's, the
// command cannot write to its own copy. A helper that kept rules of its own
// fails the last two.
func TestHelperAppliesTheLandlockRulesItIsHanded(t *testing.T) {
	skipUnlessSandbox(t)
	real := Probe()
	if !real.Landlock() {
		t.Fatalf("Landlock ABI %d: the sandbox needs 2", real.LandlockABI)
	}
	w := newWorld(t)
	outside := filepath.Join(w.home, "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	defer func() { probeHook = nil }()
	probeHook = func() Availability { return Availability{UserNSWhy: "faked off", LandlockABI: real.LandlockABI} }
	sandbox := func(edit func(*landlockRuleset)) *Sandbox {
		s := w.sandbox()
		s.AcceptWeaker, s.Warn = true, io.Discard
		s.off.landlock = edit
		return s
	}
	copyDir, err := filepath.EvalSymlinks(w.task.Copy) // the plan's rules name real paths
	if err != nil {
		t.Fatal(err)
	}
	inOutside, inCopy := filepath.Join(outside, "planted"), filepath.Join(copyDir, "planted")

	assertHeld(t, w.attackWith(t, sandbox(nil), runner.Spec{}, "write", inOutside))

	handed := sandbox(func(rs *landlockRuleset) {
		rs.Rules = append(rs.Rules, landlockRule{Path: outside, Access: rs.HandledFS})
	})
	assertEscaped(t, w.attackWith(t, handed, runner.Spec{}, "write", inOutside), inOutside)

	withoutCopy := sandbox(func(rs *landlockRuleset) {
		kept := rs.Rules[:0]
		for _, r := range rs.Rules {
			if r.Path != copyDir {
				kept = append(kept, r)
			}
		}
		if len(kept) == len(rs.Rules) {
			t.Errorf("the ruleset has no rule for the copy %s: %+v", copyDir, rs.Rules)
		}
		rs.Rules = kept
	})
	assertHeld(t, w.attackWith(t, withoutCopy, runner.Spec{}, "write", inCopy))
	// And with its rules, the copy is the command's to write.
	assertEscaped(t, w.attackWith(t, sandbox(nil), runner.Spec{}, "write", inCopy), inCopy)
}
