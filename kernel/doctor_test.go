package kernel_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kulehq/kule/kernel"
)

// ProbeFileSystem tells XFS with reflinks from tmpfs without: the clone
// is tried for real on each, and the probe files are gone after.
func TestProbeFileSystemReflinks(t *testing.T) {
	needRoot(t, "mkfs.xfs", "mount")
	dir := t.TempDir()
	img := filepath.Join(dir, "xfs.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 512<<20); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mkfs.xfs", "-q", "-m", "reflink=1", img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.xfs: %v\n%s", err, out)
	}
	xfs := filepath.Join(dir, "xfs")
	mountFS(t, xfs, "-o", "loop", img)
	tmpfs := filepath.Join(dir, "tmpfs")
	mountFS(t, tmpfs, "-t", "tmpfs", "-o", "size=8m", "tmpfs")
	for _, tc := range []struct {
		dir, typ string
		reflinks bool
	}{{xfs, "xfs", true}, {tmpfs, "tmpfs", false}} {
		info, err := kernel.ProbeFileSystem(tc.dir, true)
		if err != nil {
			t.Fatal(err)
		}
		if info.Type != tc.typ || info.Reflinks != tc.reflinks || info.Free == 0 || info.Device == 0 {
			t.Errorf("%s: %+v, want %s with reflinks %v", tc.dir, info, tc.typ, tc.reflinks)
		}
		if ents, _ := os.ReadDir(tc.dir); len(ents) != 0 {
			for _, e := range ents {
				t.Errorf("the probe left %s in %s", e.Name(), tc.dir)
			}
		}
		if info, err := kernel.ProbeFileSystem(tc.dir, false); err != nil || info.Reflinks {
			t.Errorf("without the probe, %s says reflinks %v (%v)", tc.dir, info.Reflinks, err)
		}
	}
	if _, err := kernel.ProbeFileSystem(filepath.Join(dir, "missing"), false); err == nil {
		t.Error("a missing path probes without error")
	}
}

// ProbeSealing never makes a key: a home with no secrets stays empty.
func TestProbeSealingWritesNothing(t *testing.T) {
	home := t.TempDir()
	s := kernel.ProbeSealing(home)
	if s.Recorded || s.Problem != "" || (s.Kind != "key-file" && s.Kind != "secret-service") {
		t.Errorf("an empty home: %+v", s)
	}
	if ents, _ := os.ReadDir(home); len(ents) != 0 {
		t.Errorf("ProbeSealing wrote %d entries into the home", len(ents))
	}
}
