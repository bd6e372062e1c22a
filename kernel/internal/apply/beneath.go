package apply

import (
	"errors"
	"fmt"
	"os"

	"github.com/kulehq/kule/kernel/internal/beneath"
)

// ErrLinkInPath is returned when a path in the folder passes through a
// symbolic link: Kule never writes through one, so a task that replaced a
// directory by a link to /etc cannot make a commit write into /etc. It is
// kernel/internal/beneath's ErrLink: one implementation resolves every path Kule
// writes beneath a root.
var ErrLinkInPath = beneath.ErrLink

// The folder side of a commit resolves its paths through kernel/internal/beneath.
var (
	openDir     = beneath.OpenDirAt
	removeAllAt = beneath.RemoveAllAt
	readNames   = beneath.ReadNames
	exists      = beneath.ExistsAt
)

// openRoot opens the folder itself. The folder's own path was resolved when
// the task was made; if it has become a link since, this fails.
func openRoot(root string) (int, error) {
	fd, err := beneath.OpenRootFd(root)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return -1, fmt.Errorf("open folder %s: %w", root, err)
	}
	return fd, nil
}
