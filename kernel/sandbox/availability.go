package sandbox

// Availability says what of the sandbox this system offers.
type Availability struct {
	UserNS      bool   // user namespaces can be created by this user
	UserNSWhy   string // why not
	LandlockABI int    // 0: no Landlock
}

// Missing names, for a person, what the sandbox needs and lacks.
func (a Availability) Missing() []string {
	var m []string
	if !a.UserNS {
		m = append(m, "no user namespaces ("+a.UserNSWhy+"): credentials would not be hidden, nor processes and network isolated")
	}
	if a.LandlockABI < 1 {
		m = append(m, "no Landlock (needs Linux 5.13+ with landlock in the lsm= boot list): writes outside the copy would not be refused by the kernel")
	}
	return m
}
