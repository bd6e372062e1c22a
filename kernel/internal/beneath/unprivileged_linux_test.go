//go:build linux

package beneath

import (
	"testing"

	"github.com/kulehq/kule/internal/asnobody"
)

// TestAsNobody runs the attack tests again as the nobody user, as a person
// without root runs kule: no capability lets a lookup pass a link or a
// permission check differ.
func TestAsNobody(t *testing.T) {
	if asnobody.Inside(t) {
		return
	}
	asnobody.Rerun(t, "TestAsNobody", []string{"TestEveryCallRefusesALinkOnTheWay", "TestWithTheGuardOffTheAttackLands", "TestCallsWorkBeneathTheRoot", "TestARootThatIsALinkIsRefused"})
}
