package agents

import (
	"path/filepath"
	"sort"
)

// Openings are the holes a profile opens in the sandbox, as absolute paths
// for runner.Spec: AllowWrite (its state and login), Reveal (its read-only
// settings, instructions and hooks) and Hide (every other agent's login and
// state). Hosts are the HTTPS hosts it may reach, its keys' hosts included.
type Openings struct {
	AllowWrite []string
	Reveal     []string
	Hide       []string
	Hosts      []string
}

// OpeningsOf turns a validated profile into what the sandbox must open for
// it, with home the person's home directory. ownHome, when the profile has
// own_home, is the home Kule keeps for it: writable, and the agent's
// real state is then not opened at all.
func OpeningsOf(p Profile, all []Profile, home, ownHome string) Openings {
	var o Openings
	abs := func(rel string) string {
		c, err := homePath(rel)
		if err != nil {
			return ""
		}
		return filepath.Join(home, filepath.FromSlash(c))
	}
	add := func(list *[]string, s string) {
		if s == "" {
			return
		}
		for _, x := range *list {
			if x == s {
				return
			}
		}
		*list = append(*list, s)
	}
	if p.OwnHome != "" && ownHome != "" {
		add(&o.AllowWrite, ownHome)
	} else {
		for _, s := range p.State {
			add(&o.AllowWrite, abs(s))
		}
		for _, s := range p.Login {
			add(&o.AllowWrite, abs(s))
		}
	}
	for _, s := range p.ReadOnly {
		add(&o.Reveal, abs(s))
	}
	for _, q := range all {
		if q.Name == p.Name {
			continue
		}
		for _, s := range q.Login {
			add(&o.Hide, abs(s))
		}
		for _, s := range q.State {
			add(&o.Hide, abs(s))
		}
	}
	for _, h := range p.Hosts {
		add(&o.Hosts, h)
	}
	for _, hosts := range p.Keys {
		for _, h := range hosts {
			add(&o.Hosts, h)
		}
	}
	sort.Strings(o.Hosts)
	return o
}
