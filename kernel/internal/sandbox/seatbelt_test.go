package sandbox

import (
	"strings"
	"testing"
)

// The profile text is checked here on Linux; running it needs a Mac.
func TestSeatbeltProfile(t *testing.T) {
	p := &plan{
		Copy: "/Users/ada/.kule/tasks/0badc0de/copy", Tmp: "/Users/ada/.kule/tasks/0badc0de/tmp",
		Home: "/Users/ada/.kule/tasks/0badc0de/home", Cache: "/Users/ada/.kule/tasks/0badc0de/cache", Writable: []string{"/Users/ada/out"},
		ReadOnly: []string{"/Users/ada/code/shared"}, Keep: []string{"/Users/ada/code/bin"},
		Devices: []string{"null", "zero"}, NetNS: true, ProxyPort: 8123,
	}
	strong := []string{"/Users/ada/.ssh", "/Users/ada/.kule", `/Users/ada/we"ird`}
	soft := []string{"/Users/ada/code", "/Users/ada/Documents"}
	got := seatbeltProfile(p, strong, soft)
	order := []string{
		"(deny default)",
		"(allow file-read*)\n",
		`(deny file-read* (subpath "/Users/ada/Documents") (subpath "/Users/ada/code"))`,
		`(allow file-read* (subpath "/Users/ada/code/bin") (subpath "/Users/ada/code/shared"))`,
		`(deny file-read* file-write* (subpath "/Users/ada/.kule") (subpath "/Users/ada/.ssh") (subpath "/Users/ada/we\"ird"))`,
		`(allow file-write* (subpath "/Users/ada/.kule/tasks/0badc0de/cache") (subpath "/Users/ada/.kule/tasks/0badc0de/copy") (subpath "/Users/ada/.kule/tasks/0badc0de/home") (subpath "/Users/ada/.kule/tasks/0badc0de/tmp") (subpath "/Users/ada/out"))`,
		`(allow network-outbound (remote tcp "localhost:8123"))`,
	}
	at := 0
	for _, want := range order {
		i := strings.Index(got[at:], want)
		if i < 0 {
			t.Fatalf("profile lacks (after byte %d) %s\n--- profile:\n%s", at, want, got)
		}
		at += i + len(want)
	}
	if strings.Contains(got, "(allow network*)") || strings.Contains(got, "com.apple.SecurityServer") {
		t.Fatalf("profile opens the network or the keychain:\n%s", got)
	}
	p.NoTCP, p.ProxyPort = true, 0
	if got := seatbeltProfile(p, strong, soft); strings.Contains(got, "network-outbound") {
		t.Fatalf("--no-network profile allows outbound:\n%s", got)
	}
}
