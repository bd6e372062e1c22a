package checkpoint

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkPutFileVsGit stores 1,000 small files with PutFile and, on the
// same files in the same run, with `git hash-object -w --stdin-paths` into a
// fresh bare repository (the peer). Each iteration uses fresh stores, so
// neither side finds the objects already there. It reports milliseconds per
// 1,000 files for each, the ratio kule/git, and PutFile followed by one Save
// naming all blobs (which fsyncs them; git does not fsync objects by
// default).
func BenchmarkPutFileVsGit(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git is not installed")
	}
	src := b.TempDir()
	var paths []string
	for i := range 1000 {
		p := filepath.Join(src, fmt.Sprintf("d%02d", i%50), fmt.Sprintf("f%04d.txt", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		content := strings.Repeat(fmt.Sprintf("line %d of a small file\n", i), 1+i%40)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
		paths = append(paths, p)
	}
	stdin := strings.Join(paths, "\n") + "\n"
	var kule, kuleSave, peer time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		s, err := Open(filepath.Join(b.TempDir(), fmt.Sprintf("k%d", i)))
		if err != nil {
			b.Fatal(err)
		}
		repo := filepath.Join(b.TempDir(), fmt.Sprintf("g%d.git", i))
		if out, err := exec.Command("git", "init", "-q", "--bare", repo).CombinedOutput(); err != nil {
			b.Fatalf("git init: %v %s", err, out)
		}
		b.StartTimer()

		start := time.Now()
		items := make([]Item, 0, len(paths))
		for j, p := range paths {
			blob, sum, err := s.PutFile(p)
			if err != nil {
				b.Fatal(err)
			}
			items = append(items, Item{Path: fmt.Sprintf("f%d", j),
				Before: State{Type: "file", Mode: 0o644, Blob: blob, Hash: sum}, After: State{Type: "none"}})
		}
		kule += time.Since(start)
		if err := s.Save(&Record{Items: items}); err != nil {
			b.Fatal(err)
		}
		kuleSave += time.Since(start)

		start = time.Now()
		cmd := exec.Command("git", "--git-dir", repo, "hash-object", "-w", "--stdin-paths")
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("git hash-object: %v", err)
		}
		peer += time.Since(start)
		if n := strings.Count(string(out), "\n"); n != len(paths) {
			b.Fatalf("git hash-object wrote %d ids", n)
		}
		s.Close()
	}
	n := float64(b.N)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / n }
	b.ReportMetric(ms(kule), "kule-ms/1000files")
	b.ReportMetric(ms(kuleSave), "kule+save-ms/1000files")
	b.ReportMetric(ms(peer), "git-ms/1000files")
	b.ReportMetric(float64(kule)/float64(peer), "kule/git")
	b.ReportMetric(float64(kuleSave)/float64(peer), "kule+save/git")
}
