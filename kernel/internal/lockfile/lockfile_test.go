package lockfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var (
	hexA = strings.Repeat("a", 64)
	hexB = strings.Repeat("b", 64)
	when = time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	good := "format = 1\n[plugins.tokei]\nkind = \"differ\"\nversion = \"1.2.0\"\nhashes = [\"sha256:" + hexA + "\"]\nmanifest = \"sha256:" + hexB + "\"\napproved = 2026-12-01T23:00:00Z\n" +
		"[agents.mine]\nhashes = [\"sha256:" + hexB + "\"]\napproved = 2026-12-01T23:00:00Z\n"
	for _, tc := range []struct {
		name, in string
		want     *Lock
		err      string
	}{
		{name: "good", in: good, want: &Lock{
			Plugins: map[string]Entry{"tokei": {Kind: "differ", Version: "1.2.0", Hashes: []string{"sha256:" + hexA}, Manifest: "sha256:" + hexB, Approved: when}},
			Agents:  map[string]Entry{"mine": {Hashes: []string{"sha256:" + hexB}, Approved: when}},
		}},
		{name: "extension", in: "format = 1\n[extensions.\"me.hello\"]\nversion = \"0.1.0\"\nhashes = [\"sha256:" + hexA + "\"]\napproved = 2026-12-01T23:00:00Z\n",
			want: &Lock{Plugins: map[string]Entry{}, Agents: map[string]Entry{}, Extensions: map[string]Entry{"me.hello": {Version: "0.1.0", Hashes: []string{"sha256:" + hexA}, Approved: when}}}},
		{name: "extension bare hex", in: "format = 1\n[extensions.x]\nhashes = [\"" + hexA + "\"]\n", err: "does not name its scheme"},
		{name: "empty sections", in: "format = 1\n", want: &Lock{Plugins: map[string]Entry{}, Agents: map[string]Entry{}}},
		{name: "later scheme kept", in: "format = 1\n[agents.x]\nhashes = [\"h1:abc\", \"sha256:" + hexA + "\"]\napproved = 2026-12-01T23:00:00Z\n",
			want: &Lock{Plugins: map[string]Entry{}, Agents: map[string]Entry{"x": {Hashes: []string{"h1:abc", "sha256:" + hexA}, Approved: when}}}},
		{name: "no format", in: "[agents.x]\nhashes = [\"sha256:" + hexA + "\"]\n", err: "format 0"},
		{name: "later format", in: "format = 2\n", err: "format 2"},
		{name: "unknown key", in: "format = 1\n[agents.x]\nhashes = [\"sha256:" + hexA + "\"]\nalso = 1\n", err: "unknown key agents.x.also"},
		{name: "bare hex", in: "format = 1\n[agents.x]\nhashes = [\"" + hexA + "\"]\n", err: "does not name its scheme"},
		{name: "short sha256", in: "format = 1\n[agents.x]\nhashes = [\"sha256:abcd\"]\n", err: "64 lower-case hex"},
		{name: "upper-case sha256", in: "format = 1\n[agents.x]\nhashes = [\"sha256:" + strings.ToUpper(hexA) + "\"]\n", err: "64 lower-case hex"},
		{name: "no hashes", in: "format = 1\n[plugins.x]\nversion = \"1\"\n", err: "no hashes"},
		{name: "bad manifest", in: "format = 1\n[plugins.x]\nhashes = [\"sha256:" + hexA + "\"]\nmanifest = \"md5:\"\n", err: "manifest"},
		{name: "not toml", in: "format = = 1", err: "damaged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse([]byte(tc.in))
			if tc.err != "" {
				if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Parse = %v, want ErrDamaged saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want.Extensions == nil {
				tc.want.Extensions = map[string]Entry{}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestEntryHash(t *testing.T) {
	t.Parallel()
	e := Entry{Hashes: []string{"h1:zz", "sha256:" + hexA}}
	if e.Hash(SHA256) != hexA || e.Hash("md5") != "" || Digest(SHA256, "h1:"+hexA) != "" || Digest(SHA256, Sum(SHA256, hexB)) != hexB {
		t.Fatal("Hash/Digest picked the wrong scheme")
	}
}

// An old pair of approvals files is honoured while kule.lock does not
// exist, and moves into kule.lock on the next write with nothing lost.
func TestLegacyFilesHonouredAndMigrated(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	write(t, filepath.Join(home, LegacyPlugins), `{"plugins": {"tokei": {"name": "tokei", "kind": "differ", "version": "1.2.0", "sha256": "`+hexA+`", "manifest_sha256": "`+hexB+`", "approved_at": "2026-12-01T23:00:00Z"}, "broken": {"name": "broken", "sha256": ""}}}`)
	write(t, filepath.Join(home, LegacyAgents), `{"agents": {"mine": {"sha256": "`+hexB+`", "approved": "2026-12-01T23:00:00Z"}}}`)
	want := &Lock{
		Plugins: map[string]Entry{"tokei": {Kind: "differ", Version: "1.2.0", Hashes: []string{"sha256:" + hexA}, Manifest: "sha256:" + hexB, Approved: when}},
		Agents:  map[string]Entry{"mine": {Hashes: []string{"sha256:" + hexB}, Approved: when}},
		// The older files held no extensions.
		Extensions: map[string]Entry{},
	}
	got, err := Read(home)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("old files read as (-want +got):\n%s", diff)
	}
	err = Update(home, func(l *Lock) error {
		l.Agents["new"] = Entry{Hashes: []string{Sum(SHA256, hexA)}, Approved: when}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want.Agents["new"] = Entry{Hashes: []string{"sha256:" + hexA}, Approved: when}
	data, err := os.ReadFile(Path(home))
	if err != nil {
		t.Fatal(err)
	}
	inFile, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, inFile); diff != "" {
		t.Fatalf("kule.lock after the first write (-want +got):\n%s", diff)
	}
	for _, rel := range []string{LegacyPlugins, LegacyAgents} {
		if _, err := os.Stat(filepath.Join(home, rel)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s is still there after the migration (%v): removing kule.lock would bring it back", rel, err)
		}
		if _, err := os.Stat(filepath.Join(home, rel+".migrated")); err != nil {
			t.Fatalf("%s was not set aside: %v", rel, err)
		}
	}
	if info, _ := os.Stat(Path(home)); info.Mode().Perm() != 0o600 {
		t.Fatalf("kule.lock is %v, want 0600", info.Mode().Perm())
	}
}

func TestDamagedLegacyFileIsAnError(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	write(t, filepath.Join(home, LegacyAgents), `{"agents": `)
	if _, err := Read(home); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), LegacyAgents) {
		t.Fatalf("Read = %v, want ErrDamaged naming %s", err, LegacyAgents)
	}
}

func TestUpdate(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if err := Update(home, func(*Lock) error { return ErrNoChange }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(Path(home)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an update that changed nothing wrote kule.lock: %v", err)
	}
	refuse := errors.New("refused")
	if err := Update(home, func(*Lock) error { return refuse }); !errors.Is(err, refuse) {
		t.Fatalf("Update = %v, want the change's error", err)
	}
	// Many approvals at once, plugins and agents: none is lost.
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 20 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			errs <- Update(home, func(l *Lock) error {
				l.Plugins[string(rune('a'+i))] = Entry{Hashes: []string{Sum(SHA256, hexA)}, Approved: when}
				return nil
			})
		}()
		go func() {
			defer wg.Done()
			errs <- Update(home, func(l *Lock) error {
				l.Agents[string(rune('a'+i))] = Entry{Hashes: []string{Sum(SHA256, hexB)}, Approved: when}
				return nil
			})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	l, err := Read(home)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Plugins) != 20 || len(l.Agents) != 20 {
		t.Fatalf("after 40 concurrent approvals the lock holds %d plugins and %d agents, want 20 and 20", len(l.Plugins), len(l.Agents))
	}
	write(t, Path(home), "format = 1\n[agents.x]\nhashes = [\"nope\"]\n")
	if err := Update(home, func(*Lock) error { return nil }); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), Path(home)) {
		t.Fatalf("Update over a damaged lock = %v, want ErrDamaged naming the file", err)
	}
}

// FuzzParse: Parse never panics, and what it accepts it writes back as
// the same lock.
func FuzzParse(f *testing.F) {
	f.Add([]byte("format = 1\n[plugins.tokei]\nkind = \"differ\"\nversion = \"1.2.0\"\nhashes = [\"sha256:" + hexA + "\"]\nmanifest = \"sha256:" + hexB + "\"\napproved = 2026-12-01T23:00:00Z\n"))
	f.Add([]byte("format = 1\n[agents.\"a b\"]\nhashes = [\"h1:x\"]\napproved = 2026-12-01T23:00:00.5+02:00\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := Parse(data)
		if err != nil {
			return
		}
		out, err := l.Encode()
		if err != nil {
			t.Fatalf("Encode of a parsed lock: %v", err)
		}
		again, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse of Encode's output: %v\n%s", err, out)
		}
		if diff := cmp.Diff(l, again, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
			t.Fatalf("round trip (-parsed +again):\n%s", diff)
		}
	})
}
