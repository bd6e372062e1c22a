package agents

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
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

// Prepare makes the openings fit what is on disk before a run: a state
// folder that does not exist yet is made (the agent would make it outside
// Kule too); a read-only path or a state file that does not exist is left
// out (there is nothing to show, and the sandbox cannot open a missing file
// for writing); a state entry that is a file is opened read-only, since the
// sandbox opens only folders for writing. notes say what the person should
// know.
func (o Openings) Prepare() (Openings, []string) {
	var out Openings
	var notes []string
	out.Hide, out.Hosts = o.Hide, o.Hosts
	for _, w := range o.AllowWrite {
		fi, err := os.Stat(w)
		switch {
		case err == nil && fi.IsDir():
			out.AllowWrite = append(out.AllowWrite, w)
		case err == nil:
			out.Reveal = append(out.Reveal, w)
			notes = append(notes, fmt.Sprintf("%s is a file: the sandbox opens only folders for writing, so the agent reads it but cannot change it", w))
		case errors.Is(err, fs.ErrNotExist) && filepath.Ext(w) == "":
			if err := os.MkdirAll(w, 0o700); err != nil {
				notes = append(notes, fmt.Sprintf("%s could not be made (%v): the agent cannot write there", w, err))
				continue
			}
			out.AllowWrite = append(out.AllowWrite, w)
		case errors.Is(err, fs.ErrNotExist):
			// A file not there yet (a login never made): the sandbox
			// cannot open it for writing; nothing of the person's is lost.
		default:
			notes = append(notes, fmt.Sprintf("%s: %v: the agent cannot write there", w, err))
		}
	}
	for _, r := range o.Reveal {
		if _, err := os.Stat(r); err == nil {
			out.Reveal = append(out.Reveal, r)
		}
	}
	return out, notes
}
