package agents

import (
	"sort"
)

// EnvOptions are what Environ needs beyond the profile.
type EnvOptions struct {
	Getenv  func(string) string // the person's environment
	Home    string              // HOME as the agent sees it
	OwnHome string              // the home Kule keeps for this agent (for own_home)
	Tmp     string              // the task's own TMPDIR
	// Placeholder returns what a key variable holds inside the run: a
	// placeholder the task's proxy swaps for the key on the way to the key's
	// hosts. Nil means there is no proxy yet: the key is passed as it is,
	// and Environ says so in its notes.
	Placeholder func(name string) string
}

// passed are variables every agent gets as they are: they say how to show
// text, never who the person is elsewhere.
var passed = []string{"PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "COLORTERM", "TZ", "USER", "LOGNAME", "SHELL"}

// Environ builds the agent's environment from the profile: a short list of
// harmless variables, HOME, TMPDIR, pass_env, env, own_home, and each key
// as a placeholder. Nothing else of the person's environment reaches it.
// notes say what the person should know (a key missing, a key passed as it
// is for want of a proxy).
func Environ(p Profile, o EnvOptions) (env []string, notes []string) {
	set := map[string]string{}
	for _, v := range passed {
		if s := o.Getenv(v); s != "" {
			set[v] = s
		}
	}
	for _, v := range p.PassEnv {
		if s := o.Getenv(v); s != "" {
			set[v] = s
		}
	}
	for k, v := range p.Env {
		set[k] = v
	}
	if o.Home != "" {
		set["HOME"] = o.Home
	}
	if o.Tmp != "" {
		set["TMPDIR"] = o.Tmp
	}
	if p.OwnHome != "" && o.OwnHome != "" {
		set[p.OwnHome] = o.OwnHome
	}
	keys := make([]string, 0, len(p.Keys))
	for k := range p.Keys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		real := o.Getenv(k)
		switch {
		case real == "":
			notes = append(notes, k+" is not set; the agent must log in its own way")
		case o.Placeholder != nil:
			set[k] = o.Placeholder(k)
		default:
			set[k] = real
			notes = append(notes, k+" is passed to the agent as it is: this build has no key proxy yet")
		}
	}
	names := make([]string, 0, len(set))
	for k := range set {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		env = append(env, k+"="+set[k])
	}
	return env, notes
}
