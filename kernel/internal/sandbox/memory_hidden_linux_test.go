package sandbox

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kulehq/kule/kernel/internal/runner"
)

// TestMemoryDatabaseHidden: the memory of past runs ($KULE_HOME/memory.db
// and its WAL) is covered with the rest of Kule's home; a command in the
// sandbox can neither read it nor write it. The same command run without
// the sandbox (the guard taken away) reads the marker and writes the file.
func TestMemoryDatabaseHidden(t *testing.T) {
	skipUnlessSandbox(t)
	t.Parallel()
	w := newWorld(t)
	db := filepath.Join(w.kule, "memory.db")
	write(t, db, "SQLite format 3\x00 "+marker+" remembered prompt")
	write(t, db+"-wal", marker+" wal")
	script := "cat " + db + " " + db + "-wal; echo tampered >> " + db + "; echo done"
	r := w.run(t, w.sandbox(), runner.Spec{Args: []string{"sh", "-c", script}})
	if strings.Contains(r.stdout, marker) {
		t.Fatalf("the sandbox read the memory: %s", r.stdout)
	}
	if b, _ := os.ReadFile(db); strings.Contains(string(b), "tampered") {
		t.Fatal("the sandbox wrote to the memory")
	}
	if !strings.Contains(r.stdout, "done") {
		t.Fatalf("the command did not run to its end: stdout %q stderr %s", r.stdout, r.stderr)
	}
	// Unguarded: the direct runner reads and writes it.
	var out bytes.Buffer
	if _, err := (runner.Direct{}).Run(context.Background(), runner.Spec{Args: []string{"sh", "-c", script}, Dir: w.task.Copy, Env: w.env, Stdout: &out, Stderr: &out}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), marker) {
		t.Fatalf("unsandboxed, the marker should be read: %q", out.String())
	}
	if b, _ := os.ReadFile(db); !strings.Contains(string(b), "tampered") {
		t.Fatal("unsandboxed, the file should be written")
	}
}
