//go:build linux

package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kulehq/kule/kernel/internal/runner"
)

// Each refusal is told to Refused, as the decision itself (kind, what,
// why, what to do), for the command it was for.
func TestRefusedIsToldEachRefusal(t *testing.T) {
	w := newWorld(t)
	defer func() { probeHook = nil }()
	type want struct{ kind, what string }
	tests := map[string]struct {
		probe  *Availability
		weaker bool
		spec   runner.Spec
		dev    []string
		helper string // a stand-in helper: a shell script
		runs   bool
		want   want
	}{
		"reveal-ssh":        {spec: runner.Spec{Reveal: []string{filepath.Join(w.home, ".ssh")}}, want: want{OpeningRefused, "--reveal " + filepath.Join(w.home, ".ssh")}},
		"allow-write-home":  {spec: runner.Spec{AllowWrite: []string{w.home}}, want: want{OpeningRefused, "--allow-write " + w.home}},
		"reveal-other-task": {spec: runner.Spec{Reveal: []string{w.other}}, want: want{OpeningRefused, "--reveal " + w.other}},
		"device-disk":       {dev: []string{"sda"}, want: want{DeviceRefused, "/dev/sda"}},
		"device-memory":     {dev: []string{"/dev/mem"}, want: want{DeviceRefused, "/dev/mem"}},
		"no-isolation":      {probe: &Availability{UserNSWhy: "sysctl user.max_user_namespaces is 0"}, want: want{NotRun, "no user namespaces"}},
		"helper-fails":      {helper: "echo could not mount /proc: EPERM >&4", want: want{NotRun, "could not mount /proc: EPERM"}},
		"weaker-accepted":   {probe: &Availability{UserNS: true}, weaker: true, runs: true, want: want{WeakerAccepted, "no Landlock"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			probeHook = nil
			if tc.probe != nil {
				a := *tc.probe
				probeHook = func() Availability { return a }
			} else {
				skipUnlessSandbox(t)
			}
			var got []Refusal
			s := w.sandbox()
			s.Devices, s.AcceptWeaker, s.Warn = tc.dev, tc.weaker, &strings.Builder{}
			s.Refused = func(r Refusal) { got = append(got, r) }
			if tc.helper != "" {
				s.Exe = filepath.Join(t.TempDir(), HelperName)
				if err := os.WriteFile(s.Exe, []byte("#!/bin/sh\n"+tc.helper+"\n"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			spec := tc.spec
			spec.Task, spec.Env, spec.Args = w.task, w.env, []string{"sh", "-c", "echo ran"}
			var out strings.Builder
			spec.Stdout, spec.Stderr = &out, &out
			_, err := s.Run(context.Background(), spec)
			if tc.runs != (err == nil) {
				t.Fatalf("err = %v (want it to run: %v)", err, tc.runs)
			}
			if len(got) != 1 {
				t.Fatalf("told %d refusals, want 1: %+v", len(got), got)
			}
			r := got[0]
			if r.Kind != tc.want.kind || !strings.HasPrefix(r.What, tc.want.what) || r.Why == "" || r.Do == "" || strings.Join(r.Args, " ") != "sh -c echo ran" {
				t.Fatalf("refusal %+v, want kind %s what %s… for the command", r, tc.want.kind, tc.want.what)
			}
		})
	}
	// A run with nothing refused tells nothing.
	probeHook = nil
	skipUnlessSandbox(t)
	s := w.sandbox()
	told := 0
	s.Refused = func(Refusal) { told++ }
	w.run(t, s, runner.Spec{Args: []string{"true"}, Reveal: []string{w.shared}})
	if told != 0 {
		t.Fatalf("told %d refusals for a clean run", told)
	}
}
