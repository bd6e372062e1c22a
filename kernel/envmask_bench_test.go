package kernel_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kulehq/kule/kernel"
)

// BenchmarkMaskEnvAgainstStatus measures what masking costs before each
// command on a tree of 20,000 files with a masked .env, beside the status
// every command is followed by (the peer): report the ratio of the two.
func BenchmarkMaskEnvAgainstStatus(b *testing.B) {
	b.Setenv("KULE_SECRETS_KEYFILE", "1")
	dir := b.TempDir()
	folder := filepath.Join(dir, "folder")
	for d := range 200 {
		sub := filepath.Join(folder, fmt.Sprintf("d%03d", d))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 100 {
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%03d.txt", f)), []byte("x\n"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(folder, ".env"), []byte(envFolder[".env"]), 0o600); err != nil {
		b.Fatal(err)
	}
	k, err := kernel.New(kernel.Config{Home: filepath.Join(dir, "home")})
	if err != nil {
		b.Fatal(err)
	}
	rep, err := k.NewTask(context.Background(), folder)
	if err != nil {
		b.Fatal(err)
	}
	tk := rep.Task
	b.Run("MaskEnv", func(b *testing.B) {
		for b.Loop() {
			if _, err := k.MaskEnv(tk); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Status", func(b *testing.B) {
		for b.Loop() {
			if _, err := k.Status(context.Background(), tk); err != nil {
				b.Fatal(err)
			}
		}
	})
}
