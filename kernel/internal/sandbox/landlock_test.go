package sandbox

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The command's Landlock domain for each ABI, written out: the rights are
// Landlock's bits (execute 1, write file 2, read file 4, read dir 8, …,
// refer 1<<13, truncate 1<<14, ioctl on devices 1<<15). These are the rules
// the helper made itself before the rule set moved to landlock.go; the
// helper now makes exactly what it is handed (TestHelperAppliesTheLandlock…),
// so this table is what the command's domain is.
func TestLandlockRules(t *testing.T) {
	t.Parallel()
	p := &plan{Copy: "/w/copy", Home: "/w/home", Cache: "/w/cache", Writable: []string{"/w/out"}, Devices: []string{"snd"}}
	const (
		read   = 0x000d // execute, read file, read dir
		rw     = 0x5fff // read and every write but refer (no ioctl)
		rwMove = 0x7fff // rw and refer: moves within and between
		dev    = 0x4007 // what applies to a file: execute, read, write, truncate
	)
	rules := func(fs, devAccess int64, more ...landlockRule) []landlockRule {
		r := []landlockRule{{Path: "/", Access: read}}
		for _, d := range []string{"/w/copy", "/w/home", "/w/cache", "/tmp", "/w/out"} {
			r = append(r, landlockRule{Path: d, Access: rwMove & fs})
		}
		r = append(r, landlockRule{Path: "/dev/shm", Access: rw & fs})
		for _, d := range []string{"/dev/snd", "/dev/pts", "/dev/ptmx"} {
			r = append(r, landlockRule{Path: d, Access: devAccess, Optional: true})
		}
		return append(r, more...)
	}
	for name, tc := range map[string]struct {
		abi   int
		netns bool
		proxy int
		want  landlockRuleset
	}{
		"ABI 1 counts as none":         {abi: 1, want: landlockRuleset{}},
		"ABI 2: no truncate, no ioctl": {abi: 2, want: landlockRuleset{HandledFS: 0x3fff, Rules: rules(0x3fff, dev&0x3fff)}},
		"ABI 3: truncate":              {abi: 3, want: landlockRuleset{HandledFS: 0x7fff, Rules: rules(0x7fff, dev)}},
		"ABI 4, open network: no TCP rule": {abi: 4, proxy: 3128,
			want: landlockRuleset{HandledFS: 0x7fff, Rules: rules(0x7fff, dev)}},
		"ABI 4, network namespace: TCP connect to the proxy only": {abi: 4, netns: true, proxy: 3128,
			want: landlockRuleset{HandledFS: 0x7fff, HandledNet: 2, Rules: rules(0x7fff, dev, landlockRule{Port: 3128, Access: 2})}},
		"ABI 4, no network: no TCP at all": {abi: 4, netns: true,
			want: landlockRuleset{HandledFS: 0x7fff, HandledNet: 2, Rules: rules(0x7fff, dev)}},
		"ABI 5: ioctl on the devices": {abi: 5, netns: true, proxy: 3128,
			want: landlockRuleset{HandledFS: 0xffff, HandledNet: 2, Rules: rules(0xffff, dev|0x8000, landlockRule{Port: 3128, Access: 2})}},
		"ABI 6: no signals or abstract sockets out": {abi: 6, netns: true,
			want: landlockRuleset{HandledFS: 0xffff, HandledNet: 2, Scoped: 3, Rules: rules(0xffff, dev|0x8000)}},
		"ABI 7 as 6": {abi: 7, netns: true,
			want: landlockRuleset{HandledFS: 0xffff, HandledNet: 2, Scoped: 3, Rules: rules(0xffff, dev|0x8000)}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			q := *p
			q.NetNS, q.ProxyPort = tc.netns, tc.proxy
			got := landlockRules(&q, tc.abi)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Fatalf("the command's Landlock domain (-want +got):\n%s", d)
			}
		})
	}
}
