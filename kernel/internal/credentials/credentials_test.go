package credentials

import (
	"path"
	"testing"
)

// TestListsAreClean keeps every entry a clean relative path, each named
// once, none inside another (a path inside a hidden folder is hidden by it
// already, and an overlap would read as two rules).
func TestListsAreClean(t *testing.T) {
	all := append(append([]string(nil), Home...), AgentLogins...)
	seen := map[string]bool{}
	for _, p := range all {
		if p == "" || path.IsAbs(p) || path.Clean(p) != p || p == "." || p[0] == '.' && len(p) > 1 && p[1] == '.' {
			t.Errorf("%q is not a clean path under the home", p)
		}
		if seen[p] {
			t.Errorf("%q is listed twice", p)
		}
		seen[p] = true
	}
	for _, a := range Home {
		for _, b := range all {
			if a != b && len(b) > len(a) && b[:len(a)+1] == a+"/" {
				t.Errorf("%q lies inside %q", b, a)
			}
		}
	}
}

func TestHolds(t *testing.T) {
	for rel, want := range map[string]string{
		".ssh": ".ssh", ".ssh/id_ed25519": ".ssh", ".config/gh/hosts.yml": ".config/gh",
		".docker/contexts/meta": ".docker", ".sshx": "", ".config": "", ".claude/.credentials.json": "",
	} {
		got, ok := Holds(rel)
		if got != want || ok != (want != "") {
			t.Errorf("Holds(%q) = %q, %v; want %q", rel, got, ok, want)
		}
	}
}

func TestAgentHomes(t *testing.T) {
	if got := AgentHomes("/home/p", ""); got != "/home/p/.local/share/kule/agent-homes" {
		t.Error(got)
	}
	if got := AgentHomes("/home/p", "/data"); got != "/data/kule/agent-homes" {
		t.Error(got)
	}
	if got := AgentHomes("/home/p", "rel"); got != "/home/p/.local/share/kule/agent-homes" {
		t.Error(got)
	}
}
