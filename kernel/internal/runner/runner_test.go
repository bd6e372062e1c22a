package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// The direct runner waits for Ready too, and runs nothing when it fails.
func TestDirectWaitsForReady(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	errNot := errors.New("not ready")
	spec := Spec{Args: []string{"touch", marker}, Dir: dir, Ready: func() error { return errNot }}
	if code, err := (Direct{}).Run(context.Background(), spec); !errors.Is(err, errNot) || code != -1 {
		t.Fatalf("code %d err %v, want the Ready error", code, err)
	}
	if _, err := os.Lstat(marker); err == nil {
		t.Fatal("the command ran although Ready failed")
	}
	spec.Ready = func() error { return nil }
	if code, err := (Direct{}).Run(context.Background(), spec); err != nil || code != 0 {
		t.Fatalf("code %d err %v", code, err)
	}
	if _, err := os.Lstat(marker); err != nil {
		t.Fatalf("the command did not run once ready: %v", err)
	}
}
