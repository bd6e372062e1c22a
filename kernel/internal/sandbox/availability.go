package sandbox

import "fmt"

// Availability says what of the sandbox this system offers.
type Availability struct {
	UserNS      bool   // user namespaces can be created by this user
	UserNSWhy   string // why not
	LandlockABI int    // 0: no Landlock
}

// Landlock says whether Landlock can narrow the command: ABI 2 or later.
// ABI 1 cannot allow moving a file between folders (LANDLOCK_ACCESS_FS_REFER
// came with 2), so a ruleset there would refuse every such rename and link
// in the copy; go-landlock's best effort counts it as none, and so does Kule.
func (a Availability) Landlock() bool { return a.LandlockABI >= 2 }

// Missing names, for a person, what the sandbox needs and lacks.
func (a Availability) Missing() []string {
	var m []string
	if !a.UserNS {
		m = append(m, "no user namespaces ("+a.UserNSWhy+"): credentials would not be hidden, nor processes and network isolated")
	}
	switch {
	case a.LandlockABI < 1:
		m = append(m, "no Landlock (needs Linux 5.19+ with landlock in the lsm= boot list): writes outside the copy would not be refused by the kernel")
	case !a.Landlock():
		m = append(m, fmt.Sprintf("Landlock ABI %d only (needs ABI 2, Linux 5.19+, to allow moves within the copy): writes outside the copy would not be refused by the kernel", a.LandlockABI))
	}
	return m
}
