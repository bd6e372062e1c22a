package gitstate

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// The 100k-file repository is built once per test binary run (Go calls a
// benchmark function more than once) and removed by TestMain.
var (
	bigOnce          sync.Once
	bigRoot, bigCopy string
	bigBase          *Snapshot
	bigErr           error
)

func bigRepo(b *testing.B) (string, string, *Snapshot) {
	bigOnce.Do(func() {
		bigRoot, bigErr = os.MkdirTemp("", "gitstate-bench-")
		if bigErr != nil {
			return
		}
		bigCopy, bigBase, bigErr = buildBigRepo(b, bigRoot)
	})
	if bigErr != nil {
		b.Fatal(bigErr)
	}
	return bigRoot, bigCopy, bigBase
}

func buildBigRepo(b *testing.B, root string) (string, *Snapshot, error) {
	const files = 100000
	folder := filepath.Join(root, "folder")
	for i := 0; i < files; i++ {
		p := filepath.Join(folder, fmt.Sprintf("d%03d", i%1000), fmt.Sprintf("f%05d.txt", i))
		if i < 1000 {
			os.MkdirAll(filepath.Dir(p), 0o755)
		}
		if err := os.WriteFile(p, []byte(fmt.Sprintf("file %d\n", i)), 0o644); err != nil {
			return "", nil, err
		}
	}
	run(b, folder, "init", "-q", "-b", "main")
	run(b, folder, "config", "gc.auto", "0")
	run(b, folder, "add", ".")
	run(b, folder, "commit", "-q", "-m", "100k files")
	if os.Getenv("GITSTATE_BENCH_PACKED") != "" {
		run(b, folder, "repack", "-q", "-a", "-d")
		run(b, folder, "prune")
	}
	copyDir := filepath.Join(root, "copy")
	if out, err := exec.Command("cp", "-a", folder, copyDir).CombinedOutput(); err != nil {
		return "", nil, fmt.Errorf("cp -a: %v %s", err, out)
	}
	base, err := Take(filepath.Join(copyDir, ".git"))
	if err != nil {
		return "", nil, err
	}
	enc, _ := base.Encode()
	if base, err = DecodeSnapshot(enc); err != nil {
		return "", nil, err
	}
	b.Logf("snapshot of %d index entries, %d loose objects: %d bytes of JSON", len(base.Index), len(base.Objects.Loose), len(enc))
	// The task: one commit changing one file.
	write(b, filepath.Join(copyDir, "d007", "f00007.txt"), "changed\n")
	run(b, copyDir, "commit", "-q", "-am", "one change")
	return copyDir, base, nil
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bigRoot != "" {
		os.RemoveAll(bigRoot)
	}
	os.Exit(code)
}

// BenchmarkCompareVsGitStatus compares Compare on a repository whose index
// holds 100k entries with its named peer, `git status` in the same copy
// (warm caches, index already refreshed, CommandEnv's settings), after the
// task made one commit. It prints both and the ratio (Compare / git status).
// The repository's ~100k objects stay loose (Compare's worst case: it lists
// every loose object); GITSTATE_BENCH_PACKED=1 packs them first.
//
//	go test -run '^$' -bench CompareVsGitStatus -benchtime 20x ./kernel/gitstate
func BenchmarkCompareVsGitStatus(b *testing.B) {
	if testing.Short() {
		b.Skip("builds a 100k-file repository")
	}
	needGit(b)
	root, copyDir, base := bigRepo(b)
	status := func() {
		cmd := exec.Command("git", "status", "--porcelain")
		cmd.Dir = copyDir
		cmd.Env = CommandEnv(gitEnv(root))
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git status: %v %s", err, out)
		}
	}
	status() // the first status refreshes the copy's index (new inodes)
	var tCompare, tStatus time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		eff, err := Compare(base, filepath.Join(copyDir, ".git"), copyDir)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		status()
		t2 := time.Now()
		tCompare += t1.Sub(t0)
		tStatus += t2.Sub(t1)
		if len(eff.Refs) != 1 || eff.Refs[0].Kind != RefFastForward {
			b.Fatalf("effects: %v", eff.Lines())
		}
	}
	b.StopTimer()
	c := float64(tCompare.Nanoseconds()) / float64(b.N)
	s := float64(tStatus.Nanoseconds()) / float64(b.N)
	b.ReportMetric(c/1e6, "compare-ms/op")
	b.ReportMetric(s/1e6, "gitstatus-ms/op")
	b.ReportMetric(c/s, "ratio")
	b.Logf("Compare %.1f ms, git status %.1f ms, ratio %.2f", c/1e6, s/1e6, c/s)
}
