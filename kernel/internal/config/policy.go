package config

// PolicyConfig is the [policy] section: which built-in policy judges
// changes and connections when $KULE_HOME/policy.cedar does not replace it.
type PolicyConfig struct {
	// Choice is "balanced" (the default, also when empty) or "careful".
	Choice string `toml:"choice,omitempty"`
}
