package memory

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The store of 100,000 runs the benchmarks recall over: 1,000 folders,
// prompts of 30–90 words (about 250–750 bytes) from a 2,000-word
// vocabulary, one run in eight a failure with an error's last lines of
// 10–40 words, half of those fixed by the next run.
const benchRuns = 100_000

var (
	benchOnce  sync.Once
	benchDir   string
	benchStore *Store
	benchErr   error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if benchStore != nil {
		benchStore.Close()
	}
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

var vocab = func() []string {
	r := rand.New(rand.NewPCG(1, 2))
	words := make([]string, 2000)
	for i := range words {
		n := 3 + r.IntN(8)
		b := make([]byte, n)
		for j := range b {
			b[j] = byte('a' + r.IntN(26))
		}
		words[i] = string(b)
	}
	return words
}()

func benchPrompt(r *rand.Rand) string { return benchWords(r, 30+r.IntN(61)) }

func benchWords(r *rand.Rand, n int) string {
	w := make([]string, n)
	for i := range w {
		// Zipf-like: common words are common.
		w[i] = vocab[int(float64(len(vocab))*r.Float64()*r.Float64())]
	}
	return strings.Join(w, " ")
}

// fillBench writes n runs through the store's own statements (StartRun's
// and EndRun's, in transactions of 1,000 runs so that filling is quick).
func fillBench(s *Store, n int) error {
	r := rand.New(rand.NewPCG(3, 4))
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < n; i += 1000 {
		tx, err := s.db.Begin()
		if err != nil {
			return err
		}
		for j := i; j < i+1000 && j < n; j++ {
			folder := fmt.Sprintf("/home/p/code/project-%03d", j%1000)
			task := fmt.Sprintf("%08x", j/10)
			kind := KindAgent
			prompt := benchPrompt(r)
			if j%3 == 0 {
				kind, prompt = KindExec, "go test ./pkg/"+vocab[r.IntN(200)]
			}
			failed := j%8 == 0
			how, exit, tail := EndDone, 0, ""
			if failed {
				how, exit = EndFailed, 1
				tail = "--- FAIL: Test" + vocab[r.IntN(500)] + "\n    " + benchWords(r, 10+r.IntN(31)) + "\nFAIL"
			}
			cost := 0.0
			if kind == KindAgent {
				cost = 0.05 + r.Float64()*2
			}
			at := start.Add(time.Duration(j) * time.Minute)
			res, err := tx.Exec(`INSERT INTO runs(task, folder, kind, agent, prompt, started, ended, exit_code, ended_how, error_tail, cost, currency, effects, paths, outcome)
				VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`, task, folder, kind, "claude", prompt, ms(at), ms(at.Add(3*time.Minute)), exit, how, tail, cost, "USD",
				`{"modify":2,"add":1}`, `["pkg/a.go","pkg/b.go","README.md"]`, OutcomeCommitted)
			if err != nil {
				tx.Rollback()
				return err
			}
			id, _ := res.LastInsertId()
			if _, err := tx.Exec(`INSERT INTO search(rowid, body) VALUES(?, ?)`, searchRow(id), prompt+"\n"+tail+"\npkg/a.go pkg/b.go README.md"); err != nil {
				tx.Rollback()
				return err
			}
			if failed {
				if _, err := tx.Exec(`INSERT INTO failures(run_id, task, folder, kind, signature, command, error_tail, paths, trust, created) VALUES(?,?,?,?,?,?,?,?,?,?)`,
					id, task, folder, "exit", Signature("exit", kind, prompt, tail, ""), prompt, tail, `["pkg/a.go"]`, Trusted, ms(at)); err != nil {
					tx.Rollback()
					return err
				}
			}
			if j%16 == 1 { // the run after a failure fixed it
				if _, err := tx.Exec(`INSERT INTO links(failure_id, fix_run_id, changed, state, created) VALUES((SELECT max(id) FROM failures), ?, '{}', 'valid', ?)`, id, ms(at)); err != nil {
					tx.Rollback()
					return err
				}
			}
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	_, err := s.db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
	return err
}

func benchDB(b *testing.B) *Store {
	b.Helper()
	benchOnce.Do(func() {
		if keep := os.Getenv("KULE_MEMORY_BENCH_DB"); keep != "" {
			// A store kept between runs (made once), to profile recall.
			_, statErr := os.Stat(keep)
			if benchStore, benchErr = Open(keep); benchErr == nil && statErr != nil {
				benchErr = fillBench(benchStore, benchRuns)
			}
			return
		}
		if benchDir, benchErr = os.MkdirTemp("", "kule-memory-bench-"); benchErr != nil {
			return
		}
		if benchStore, benchErr = Open(filepath.Join(benchDir, File)); benchErr != nil {
			return
		}
		benchErr = fillBench(benchStore, benchRuns)
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchStore
}

// BenchmarkRecall is what recall adds to a run's start over 100,000 past
// runs (the budget of similar runs and the folder's notes), beside its
// named peer: the same question asked the naive way, a LIKE scan of every
// prompt for the prompt's words. It reports the ratio and the store's size.
func BenchmarkRecall(b *testing.B) {
	s := benchDB(b)
	r := rand.New(rand.NewPCG(5, 6))
	prompts := make([]string, 64)
	for i := range prompts {
		prompts[i] = benchPrompt(r)
	}
	var kule, peer, kuleCPU time.Duration
	b.Run("kule", func(b *testing.B) {
		t0, c0 := time.Now(), cpuTime()
		for i := 0; i < b.N; i++ {
			rec, err := s.Recall(ctx, fmt.Sprintf("/home/p/code/project-%03d", i%1000), prompts[i%len(prompts)])
			if err != nil || rec.Similar == 0 {
				b.Fatalf("recall: %+v %v", rec, err)
			}
		}
		kule = time.Since(t0) / time.Duration(b.N)
		kuleCPU = (cpuTime() - c0) / time.Duration(b.N)
		// On a shared machine the wall time waits for a processor too:
		// the process's processor time a recall is the fair measure.
		b.ReportMetric(float64(kuleCPU.Microseconds())/1000, "cpu-ms/op")
	})
	var peerCPU time.Duration
	b.Run("like-scan", func(b *testing.B) {
		t0, c0 := time.Now(), cpuTime()
		for i := 0; i < b.N; i++ {
			_, words := terms(prompts[i%len(prompts)], 12)
			q := `SELECT id, cost FROM runs WHERE 0`
			var args []any
			for _, w := range words {
				q += ` OR prompt LIKE ?`
				args = append(args, "%"+w+"%")
			}
			rows, err := s.db.Query(q+` LIMIT 200`, args...)
			if err != nil {
				b.Fatal(err)
			}
			for rows.Next() {
			}
			rows.Close()
		}
		peer = time.Since(t0) / time.Duration(b.N)
		peerCPU = (cpuTime() - c0) / time.Duration(b.N)
		b.ReportMetric(float64(peerCPU.Microseconds())/1000, "cpu-ms/op")
	})
	// The second peer: the same rows asked of SQLite plainly, with no
	// choice of telling words and no notes — the folder's newest agent
	// runs' costs, and the full-text matches of every word of the prompt
	// joined to their costs.
	var plain, plainCPU time.Duration
	b.Run("plain-query", func(b *testing.B) {
		t0, c0 := time.Now(), cpuTime()
		for i := 0; i < b.N; i++ {
			_, words := terms(prompts[i%len(prompts)], 12)
			for j, w := range words {
				words[j] = `"` + w + `"`
			}
			for _, q := range []struct {
				sql  string
				args []any
			}{
				{`SELECT id, cost, currency FROM runs WHERE folder = ? AND kind = ? AND cost > 0 AND ended != 0 ORDER BY started DESC LIMIT 50`, []any{fmt.Sprintf("/home/p/code/project-%03d", i%1000), KindAgent}},
				{`SELECT r.id, r.cost, r.currency FROM (SELECT rowid FROM search WHERE search MATCH ? ORDER BY rank LIMIT 100) m JOIN runs r ON r.id = m.rowid / 2 WHERE r.cost > 0`, []any{strings.Join(words, " OR ")}},
				{`SELECT id, error_tail FROM failures WHERE folder = ? ORDER BY created DESC LIMIT 40`, []any{fmt.Sprintf("/home/p/code/project-%03d", i%1000)}},
			} {
				rows, err := s.db.Query(q.sql, q.args...)
				if err != nil {
					b.Fatal(err)
				}
				for rows.Next() {
				}
				rows.Close()
			}
		}
		plain = time.Since(t0) / time.Duration(b.N)
		plainCPU = (cpuTime() - c0) / time.Duration(b.N)
		b.ReportMetric(float64(plainCPU.Microseconds())/1000, "cpu-ms/op")
	})
	fi, err := os.Stat(s.path)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(fi.Size())/1e6, "MB-store")
	if kule > 0 && peer > 0 && plain > 0 {
		fmt.Printf("recall over %d runs: kule %v (processor %v), like-scan %v (processor %v), ratio %.2f (processor %.2f); plain-query %v (processor %v), ratio %.2f (processor %.2f); store %.1f MB (%.0f bytes a run)\n",
			benchRuns, kule, kuleCPU, peer, peerCPU, float64(kule)/float64(peer), float64(kuleCPU)/float64(peerCPU),
			plain, plainCPU, float64(kule)/float64(plain), float64(kuleCPU)/float64(plainCPU), float64(fi.Size())/1e6, float64(fi.Size())/benchRuns)
	}
}

// cpuTime is the processor time the process has used (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRecordRun is the cost of one run's record (StartRun and EndRun,
// each its own transaction) on a store of 100,000 runs, beside appending
// the same record as a JSON line to a file and syncing it.
func BenchmarkRecordRun(b *testing.B) {
	s := benchDB(b)
	b.Run("kule", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			id, err := s.StartRun(ctx, Start{Task: "bench", Folder: "/home/p/code/project-001", Kind: KindExec, Prompt: "go test ./..."})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := s.EndRun(ctx, id, End{Exit: new(int), Effects: map[string]int{"modify": 1}, Paths: []string{"a.go"}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jsonl-append", func(b *testing.B) {
		f, err := os.OpenFile(filepath.Join(b.TempDir(), "runs.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		line := []byte(`{"task":"bench","folder":"/home/p/code/project-001","kind":"exec","prompt":"go test ./...","exit":0,"effects":{"modify":1},"paths":["a.go"]}` + "\n")
		for i := 0; i < b.N; i++ {
			if _, err := f.Write(line); err != nil {
				b.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRunsWithSubjects is what a graduation review reads: 20,000 runs
// of one folder, one in four with the host it connected to, read with their
// subjects (Runs), beside the same rows read without them (the read before
// the subjects table). It prints the ratio of processor time.
func BenchmarkRunsWithSubjects(b *testing.B) {
	const n = 20_000
	s, err := Open(filepath.Join(b.TempDir(), File))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	tx, err := s.db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < n; i++ {
		res, err := tx.Exec(`INSERT INTO runs(task, folder, kind, prompt, started, ended, ended_how, exit_code, rules, outcome, outcome_at)
			VALUES(?, '/p', 'exec', 'curl', ?, ?, 'done', 0, '{"ci":{"asked":1,"approved":1}}', 'committed', ?)`, fmt.Sprintf("t%03d", i%300), i*10+1, i*10+2, i*10+3)
		if err != nil {
			b.Fatal(err)
		}
		if i%4 == 0 {
			id, _ := res.LastInsertId()
			if _, err := tx.Exec(`INSERT INTO subjects(run_id, rule, kind, subject, asked, approved) VALUES(?, 'unknown-hosts', 'host', ?, 1, 1)`, id, fmt.Sprintf("h%d.example:443", i%50)); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	read := func(b *testing.B, with bool) time.Duration {
		c0 := cpuTime()
		for i := 0; i < b.N; i++ {
			var rs []*Run
			var err error
			if with {
				rs, err = s.Runs(ctx, Filter{Folder: "/p", Limit: n})
			} else {
				rs, err = s.queryRunsOnly(`SELECT `+runCols+` FROM runs WHERE folder = ? ORDER BY started DESC, id DESC LIMIT ?`, "/p", n)
			}
			if err != nil || len(rs) != n {
				b.Fatalf("%d runs: %v", len(rs), err)
			}
		}
		return (cpuTime() - c0) / time.Duration(b.N)
	}
	var kule, peer time.Duration
	b.Run("kule", func(b *testing.B) { kule = read(b, true) })
	b.Run("without-subjects", func(b *testing.B) { peer = read(b, false) })
	if kule > 0 && peer > 0 {
		fmt.Printf("graduation's read of %d runs (%d with a subject): with subjects %v processor, without %v, ratio %.2f\n", n, n/4, kule, peer, float64(kule)/float64(peer))
	}
}

// queryRunsOnly is queryRuns without the subjects: the peer of the read.
func (s *Store) queryRunsOnly(q string, args ...any) ([]*Run, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// BenchmarkAddTaskSubject is the cost of the first connection of a run to
// a host that asks (the write the proxy's decision makes once per rule and
// host), beside StartRun, the write every run makes at its start.
func BenchmarkAddTaskSubject(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), File))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := s.StartRun(ctx, Start{Task: "bench", Folder: "/p", Kind: KindExec, Prompt: "curl"}); err != nil {
		b.Fatal(err)
	}
	var kule, peer time.Duration
	b.Run("kule", func(b *testing.B) {
		c0 := cpuTime()
		for i := 0; i < b.N; i++ {
			u := SubjectUse{Rule: "unknown-hosts", Kind: SubjectHost, Subject: fmt.Sprintf("h%d.example:443", i), Asked: 1, Approved: 1}
			if id, err := s.AddTaskSubject(ctx, "bench", true, u); err != nil || id == 0 {
				b.Fatal(id, err)
			}
		}
		kule = (cpuTime() - c0) / time.Duration(b.N)
	})
	b.Run("start-run", func(b *testing.B) {
		c0 := cpuTime()
		for i := 0; i < b.N; i++ {
			if _, err := s.StartRun(ctx, Start{Task: "other", Folder: "/p", Kind: KindExec, Prompt: "curl"}); err != nil {
				b.Fatal(err)
			}
		}
		peer = (cpuTime() - c0) / time.Duration(b.N)
	})
	if kule > 0 && peer > 0 {
		fmt.Printf("a connection's subject: %v processor, a run's start %v, ratio %.2f\n", kule, peer, float64(kule)/float64(peer))
	}
}
