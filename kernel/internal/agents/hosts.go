package agents

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/kulehq/kule/kernel/internal/atomicfile"
)

// ErrNotPersonal: the profile to change is not in the person's agents.toml.
var ErrNotPersonal = errors.New("agents: not a profile of yours")

// AddHosts adds hosts to the hosts of the person's profile called name in
// agents.toml, keeping the rest of the file (comments too) as it is. The
// changed profile then waits for approval, as any change does. It returns
// the hosts that were new.
func AddHosts(kuleHome, name string, hosts []string) ([]string, error) {
	path := PersonalPath(kuleHome)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %q (%v)", ErrNotPersonal, name, err)
	}
	ps, err := Parse(b, path)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(ps, func(p Profile) bool { return p.Name == name })
	if i < 0 {
		return nil, fmt.Errorf("%w: %q is not in %s", ErrNotPersonal, name, path)
	}
	want := append([]string(nil), ps[i].Hosts...)
	var added []string
	for _, h := range hosts {
		if !slices.Contains(want, h) {
			want = append(want, h)
			added = append(added, h)
		}
	}
	if len(added) == 0 {
		return nil, nil
	}
	out, err := setHostsLine(string(b), i, want)
	if err != nil {
		return nil, fmt.Errorf("agents: %s: %w; add the hosts by hand", path, err)
	}
	// The edit must read back as exactly that change.
	back, err := Parse([]byte(out), path)
	if err != nil || len(back) != len(ps) || !slices.Equal(back[i].Hosts, want) {
		return nil, fmt.Errorf("agents: %s: the hosts of %q could not be changed safely (the file was kept as it was); add them by hand", path, name)
	}
	back[i].Hosts = ps[i].Hosts
	for j := range ps {
		if back[j].Hash() != ps[j].Hash() {
			return nil, fmt.Errorf("agents: %s: changing the hosts of %q would change another field (the file was kept as it was); add them by hand", path, name)
		}
	}
	if err := atomicfile.Write(path, []byte(out), 0o600); err != nil {
		return nil, fmt.Errorf("agents: %w", err)
	}
	return added, nil
}

// setHostsLine rewrites the hosts of the n-th [[agent]] table of a TOML
// file: its hosts line (one line or a bracketed list over several) is
// replaced, or one is added after the table's name line.
func setHostsLine(src string, n int, hosts []string) (string, error) {
	quoted := make([]string, len(hosts))
	for i, h := range hosts {
		quoted[i] = strconv.Quote(h)
	}
	line := "hosts = [" + strings.Join(quoted, ", ") + "]"
	lines := strings.Split(src, "\n")
	table := -1
	start, end := -1, len(lines)
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "[") && !strings.HasPrefix(t, "[[agent]]") && table == n && start >= 0 {
			end = i // a sub-table ends the agent's own keys
			break
		}
		if strings.HasPrefix(t, "[[agent]]") {
			table++
			if table == n {
				start = i
			} else if table == n+1 {
				end = i
				break
			}
		}
	}
	if start < 0 {
		return "", errors.New("its [[agent]] table was not found")
	}
	nameAt := -1
	for i := start + 1; i < end; i++ {
		t := strings.TrimSpace(lines[i])
		key, _, ok := strings.Cut(t, "=")
		if !ok {
			continue
		}
		switch strings.TrimSpace(key) {
		case "name":
			nameAt = i
		case "hosts":
			last := i
			for last < end && !strings.Contains(stripComment(lines[last]), "]") {
				last++
			}
			if last == end {
				return "", errors.New("its hosts list does not end")
			}
			out := append(append(append([]string{}, lines[:i]...), line), lines[last+1:]...)
			return strings.Join(out, "\n"), nil
		}
	}
	if nameAt < 0 {
		return "", errors.New("its name line was not found")
	}
	out := append(append(append([]string{}, lines[:nameAt+1]...), line), lines[nameAt+1:]...)
	return strings.Join(out, "\n"), nil
}

// stripComment drops a # comment outside quotes.
func stripComment(l string) string {
	in := false
	for i, r := range l {
		switch {
		case r == '"':
			in = !in
		case r == '#' && !in:
			return l[:i]
		}
	}
	return l
}
