package sandbox

import (
	"fmt"
	"strings"

	"github.com/kulehq/kule/kernel/internal/runner"
)

// Kinds of Refusal.
const (
	// NotRun: isolation could not be set up, so the command did not run
	// (the sandbox fails closed).
	NotRun = "not-run"
	// OpeningRefused: an --allow-write or --reveal (or a profile's
	// opening) would have opened what the sandbox hides.
	OpeningRefused = "opening"
	// DeviceRefused: a device named in the sandbox's settings is never
	// given (disks, memory, input devices, consoles).
	DeviceRefused = "device"
	// WeakerAccepted: the command ran with less isolation than Kule gives,
	// because the person accepted it; said on every such run.
	WeakerAccepted = "weaker"
	// SocketsReachable: named unix sockets that stay in reach of the
	// command (in the task's own folders or an --allow-write folder).
	SocketsReachable = "sockets"
)

// Refusal is one thing the sandbox refused, or weakened, for one run: what
// Sandbox.Refused is told, so that the task's sandbox log can keep it. It
// is the decision itself, never parsed from a message.
type Refusal struct {
	Kind string   // NotRun, OpeningRefused, DeviceRefused, WeakerAccepted or SocketsReachable
	Args []string // the command the refusal was for
	What string   // what was refused ("--reveal /root/.ssh", "/dev/sda")
	Why  string   // why, in words a person reads
	Do   string   // what to do next
}

// refuse tells s.Refused of r, for spec's command.
func (s *Sandbox) refuse(spec runner.Spec, r Refusal) {
	if s.Refused == nil {
		return
	}
	r.Args = append([]string(nil), spec.Args...)
	s.Refused(r)
}

// notRun tells of a command that did not run because the sandbox could not
// be set up, and returns err unchanged.
func (s *Sandbox) notRun(spec runner.Spec, err error, what, do string) error {
	s.refuse(spec, Refusal{Kind: NotRun, What: what, Why: "the sandbox could not be set up, so the command did not run and nothing changed", Do: do})
	return err
}

// openingRefused tells of an opening that would reach a hidden path, and
// returns err unchanged.
func (s *Sandbox) openingRefused(spec runner.Spec, err error, flag, path, hidden string) error {
	why := "it would open a path Kule hides from every command (credentials, Kule's home or another task)"
	if hidden != "" {
		why = fmt.Sprintf("it would open %s, which Kule hides from every command (credentials, Kule's home or another task)", hidden)
	}
	s.refuse(spec, Refusal{Kind: OpeningRefused, What: flag + " " + path, Why: why,
		Do: "nothing ran; run it again without " + flag + " " + path + ", or open a narrower path that holds no credentials"})
	return err
}

// fixSystem is what to do when isolation is missing.
const fixSystem = "fix the system (see `kule isolation`), or accept weaker isolation with `kule isolation --accept-weaker on`"

// weaker tells of a run that goes on with the isolation that is available.
func (s *Sandbox) weaker(spec runner.Spec, missing []string) {
	s.refuse(spec, Refusal{Kind: WeakerAccepted, What: strings.Join(missing, "; "),
		Why: "weaker isolation is accepted in this home's settings, so the command ran without these parts",
		Do:  "fix the system to get them back, or turn it off with `kule isolation --accept-weaker off`"})
}

// hiddenBy names the hidden path that opening path would reach: one above
// it, or one inside it.
func hiddenBy(path string, hidden []string) string {
	for _, h := range hidden {
		if within(path, h) || within(h, path) {
			return h
		}
	}
	return ""
}
