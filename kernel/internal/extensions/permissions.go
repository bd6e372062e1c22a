package extensions

import (
	"fmt"
	"sort"

	"github.com/kulehq/kule/sdk/extension"
)

// Methods are the calls an extension's JavaScript can make back into Kule
// (through the host's bridge), each with the permission it needs. A method
// not listed here is refused whatever the extension was granted: there is no
// method for secrets, answers to questions, commit, rollback, undo,
// policies, remembered rules or Kule's home.
var Methods = map[string]extension.Permission{
	"tasks.list":     extension.PermTasksRead,
	"tasks.get":      extension.PermTasksRead,
	"review.effects": extension.PermReviewRead,
	"files.read":     extension.PermFilesRead,
	"notify":         extension.PermNotify,
}

// Allowed checks one call of the extension whose approved manifest is m:
// nil when m asks for the method's permission, ErrDenied otherwise. The
// host's word is never taken for it: the kernel knows which extension a
// host process serves, and checks against the manifest it approved.
func Allowed(m *extension.Manifest, method string) error {
	p, ok := Methods[method]
	if !ok {
		return fmt.Errorf("%w: %s called %q, which is not a call Kule offers extensions (calls: %v)", ErrDenied, m.ID, method, methodNames())
	}
	if !m.Has(p) {
		return fmt.Errorf("%w: %s called %q, which needs the permission %q it was not granted; nothing was read or changed", ErrDenied, m.ID, method, p)
	}
	return nil
}

func methodNames() []string {
	var out []string
	for k := range Methods {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
