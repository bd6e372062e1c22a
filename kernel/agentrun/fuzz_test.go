package agentrun

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzHostsOf: any network.jsonl reads as one sorted line a host:port, each
// refused host counted among Wanted only when it never passed.
func FuzzHostsOf(f *testing.F) {
	f.Add([]byte(`{"host":"a.test","port":443,"verdict":"refused","rule":"unknown-hosts"}` + "\n" + `{"host":"a.test","port":443,"verdict":"tunneled"}` + "\n"))
	f.Add([]byte(`{"host":"b.test","port":80,"verdict":"forwarded"}` + "\nnot json\n{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "network.jsonl")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		hosts, err := hostsOf(path)
		if err != nil {
			return // a line longer than the scanner takes
		}
		for i := 1; i < len(hosts); i++ {
			a, b := hosts[i-1], hosts[i]
			if a.Host > b.Host || (a.Host == b.Host && a.Port >= b.Port) {
				t.Fatalf("hosts not sorted and unique: %+v", hosts)
			}
		}
		rep := TryReport{Hosts: hosts}
		for _, w := range rep.Wanted() {
			if w == "" {
				t.Fatal("an empty host is wanted")
			}
		}
	})
}
