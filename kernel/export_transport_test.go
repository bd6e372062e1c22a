package kernel

// SetHideTransportSecrets switches the guard that keeps transports' tokens
// out of tasks' proxies (tests show what it guards) and returns the undo.
func SetHideTransportSecrets(on bool) func() {
	old := hideTransportSecrets
	hideTransportSecrets = on
	return func() { hideTransportSecrets = old }
}
