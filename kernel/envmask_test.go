package kernel_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/internal/runner"
)

const (
	stripeKey = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
	dbPass    = "hunter2-correct-horse"
	newKey    = "sk-proj-Zq8xW3vB7nM1kL5pR9tY2uI6oP4aS0dF"
)

var envFolder = map[string]string{
	".env":           "STRIPE_KEY=" + stripeKey + "\nDEBUG=true\nPORT=3000\n",
	".env.example":   "STRIPE_KEY=sk_live_your_key_goes_here_xxxx\n",
	"config/app.env": "DATABASE_URL=postgres://app:" + dbPass + "@db/app\n",
	".envrc":         "export API_TOKEN=tok_8f14e45fceea167a5a36dedd4bea2543\n",
	"main.go":        "package main\n",
}

var realValues = []string{stripeKey, dbPass, "tok_8f14e45fceea167a5a36dedd4bea2543"}

// noRealValue fails if any real value is readable anywhere in the copy.
func noRealValue(t *testing.T, copyDir string, values ...string) {
	t.Helper()
	_ = filepath.Walk(copyDir, func(p string, info os.FileInfo, err error) error {
		if err != nil || !info.Mode().IsRegular() {
			return nil
		}
		b, _ := os.ReadFile(p)
		for _, v := range values {
			if bytes.Contains(b, []byte(v)) {
				t.Errorf("the copy shows a real value in %s", p)
			}
		}
		return nil
	})
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The whole round: the copy never shows the real values, a masked file is
// no effect, the folder keeps its bytes, a commit of an edit writes the real
// values back, and undo and rollback leave the copy masked again.
func TestDotenvValuesAreMaskedInTheCopyAndRealInTheFolder(t *testing.T) {
	t.Setenv("KULE_SECRETS_KEYFILE", "1")
	for _, backend := range []string{"copy", "reflink"} {
		t.Run(backend, func(t *testing.T) {
			dir := t.TempDir()
			if backend == "reflink" { // on a loop-mounted XFS, as a person's Btrfs or XFS home
				needRoot(t, "mkfs.xfs", "mount")
				img := filepath.Join(dir, "xfs.img")
				must(t, os.WriteFile(img, nil, 0o600))
				must(t, os.Truncate(img, 300<<20))
				if out, err := exec.Command("mkfs.xfs", "-q", "-m", "reflink=1", img).CombinedOutput(); err != nil {
					t.Fatalf("mkfs.xfs: %v\n%s", err, out)
				}
				dir = filepath.Join(dir, "mnt")
				mountFS(t, dir, "-o", "loop", img)
			}
			folder := filepath.Join(dir, "folder")
			write(t, folder, envFolder)
			k, err := kernel.New(kernel.Config{Home: filepath.Join(dir, "home"), Backend: backend})
			must(t, err)
			f := &fixture{t: t, k: k, folder: folder}
			before := tree(t, f.folder)
			rep, err := f.k.NewTask(context.Background(), f.folder)
			must(t, err)
			tk := rep.Task
			if tk.Backend != backend {
				t.Fatalf("backend = %s, want %s", tk.Backend, backend)
			}
			copyDir := tk.Paths.Copy
			noRealValue(t, copyDir, realValues...)
			if got := read(t, filepath.Join(copyDir, ".env.example")); got != envFolder[".env.example"] {
				t.Errorf(".env.example was masked: %q", got)
			}
			if got := read(t, filepath.Join(copyDir, ".env")); !strings.Contains(got, "STRIPE_KEY=kule-secret-STRIPE_KEY-") || !strings.Contains(got, "DEBUG=true\nPORT=3000\n") {
				t.Errorf("copy .env = %q", got)
			}
			if b, _ := os.ReadFile(filepath.Join(tk.Paths.Dir, "secrets.json")); len(b) == 0 || bytes.Contains(b, []byte(stripeKey)) {
				t.Errorf("secrets.json is missing or not sealed")
			}
			st, err := f.k.Status(context.Background(), tk)
			must(t, err)
			if len(st.Effects) != 0 {
				t.Fatalf("a masked .env reads as an effect: %v", lines(st.Effects))
			}

			// A command sees the placeholder, and reading is no effect.
			st = f.sh(tk, "grep STRIPE_KEY .env > /dev/null && cat .env config/app.env > ../seen.txt")
			if len(st.Effects) != 0 {
				t.Fatalf("reading .env is an effect: %v", lines(st.Effects))
			}
			if seen := read(t, filepath.Join(tk.Paths.Dir, "seen.txt")); strings.Contains(seen, stripeKey) || strings.Contains(seen, dbPass) {
				t.Fatalf("the command read a real value:\n%s", seen)
			}

			// The agent edits the .env and adds a key of its own.
			st = f.sh(tk, "echo 'FEATURE=on' >> .env && echo 'OPENAI_API_KEY="+newKey+"' >> config/app.env")
			if got := lines(st.Effects); !cmp.Equal(got, []string{"~ .env", "~ config/app.env"}) {
				t.Fatalf("effects of the edit = %v", got)
			}
			if _, err := f.k.Commit(context.Background(), tk, kernel.CommitOptions{IncludeIgnored: true}); err != nil {
				t.Fatal(err)
			}
			if got, want := read(t, filepath.Join(f.folder, ".env")), envFolder[".env"]+"FEATURE=on\n"; got != want {
				t.Fatalf("folder .env after commit = %q, want %q", got, want)
			}
			if got, want := read(t, filepath.Join(f.folder, "config/app.env")), envFolder["config/app.env"]+"OPENAI_API_KEY="+newKey+"\n"; got != want {
				t.Fatalf("folder config/app.env after commit = %q, want %q", got, want)
			}
			noRealValue(t, copyDir, append(realValues, newKey)...)
			if st, _ := f.k.Status(context.Background(), tk); len(st.Effects) != 0 {
				t.Fatalf("after the commit, status = %v", lines(st.Effects))
			}

			// Undo: the folder is byte for byte as it was, the copy masked.
			if _, err := f.k.Undo(context.Background(), tk); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(before, tree(t, f.folder)); d != "" {
				t.Fatalf("undo did not give the folder back (-before +after):\n%s", d)
			}
			noRealValue(t, copyDir, realValues...)
			if st, _ := f.k.Status(context.Background(), tk); len(st.Effects) != 0 {
				t.Fatalf("after the undo, status = %v", lines(st.Effects))
			}

			// Rollback of an edit leaves the copy masked too.
			f.sh(tk, "echo 'X=1' >> .env")
			if _, err := f.k.Rollback(context.Background(), tk); err != nil {
				t.Fatal(err)
			}
			noRealValue(t, copyDir, realValues...)
			if st, _ := f.k.Status(context.Background(), tk); len(st.Effects) != 0 {
				t.Fatalf("after the rollback, status = %v", lines(st.Effects))
			}
			if d := cmp.Diff(before, tree(t, f.folder)); d != "" {
				t.Fatalf("the folder changed (-before +after):\n%s", d)
			}
		})
	}
}

// Real values that reach the copy some other way (a crash between an undo
// and its masking) are masked again before the next command runs.
func TestDotenvIsMaskedBeforeEveryCommand(t *testing.T) {
	t.Setenv("KULE_SECRETS_KEYFILE", "1")
	f := newFixture(t, envFolder)
	tk := f.newTask()
	must(t, os.WriteFile(filepath.Join(tk.Paths.Copy, ".env"), []byte(envFolder[".env"]), 0o644))
	var out bytes.Buffer
	code, st, err := f.k.Exec(context.Background(), tk, kernel.ExecOptions{Args: []string{"cat", ".env"}, Spec: runner.Spec{Stdout: &out, Stderr: os.Stderr}})
	if err != nil || code != 0 {
		t.Fatalf("exec: %d %v", code, err)
	}
	if strings.Contains(out.String(), stripeKey) || !strings.Contains(out.String(), "kule-secret-") {
		t.Fatalf("the command read:\n%s", out.String())
	}
	if len(st.Effects) != 0 {
		t.Fatalf("masking again is an effect: %v", lines(st.Effects))
	}
	changed, err := f.k.MaskEnv(tk)
	if err != nil || len(changed) != 0 {
		t.Fatalf("MaskEnv on a masked copy = %v, %v; want nothing to do", changed, err)
	}
	// A command that rewrites the masked file unchanged: a change until the
	// next command, which sees it means what the folder holds.
	st = f.sh(tk, "cp .env .env.tmp && rm .env && mv .env.tmp .env")
	if got := lines(st.Effects); !cmp.Equal(got, []string{"~ .env"}) {
		t.Fatalf("after rewriting .env: %v", got)
	}
	st = f.sh(tk, "true")
	if len(st.Effects) != 0 {
		t.Fatalf("the rewritten masked .env is still a change: %v", lines(st.Effects))
	}
}
