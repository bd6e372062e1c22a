package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// A .env that git tracks unmasks itself: the copy's file holds a
// placeholder, but `git show HEAD:.env` in the copy prints the real value.
// Kule cannot take it out of history; kule new and kule status say so
// plainly, and say nothing of a .env git ignores.
func TestTrackedEnvIsSaid(t *testing.T) {
	dir := t.TempDir()
	folder := filepath.Join(dir, "folder")
	const secret = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"
	writeFile(t, filepath.Join(folder, ".env"), "API_KEY="+secret+"\n")
	writeFile(t, filepath.Join(folder, "web/.env.local"), "TOKEN=ghp_0123456789abcdefghijklmnopqrstuvwxyzAB\n")
	writeFile(t, filepath.Join(folder, ".gitignore"), "web/.env.local\n")
	writeFile(t, filepath.Join(folder, "main.go"), "package main\n")
	git(t, folder, "init", "-q")
	git(t, folder, "add", "-A")
	git(t, folder, "-c", "user.email=me@example.com", "-c", "user.name=Me", "commit", "-qm", "first")
	c := cli{t: t, home: filepath.Join(dir, "home")}

	out, err := c.stdout("new", "--json", folder)
	if err != nil {
		t.Fatalf("kule new: %v\n%s", err, out)
	}
	var made struct {
		ID    string   `json:"id"`
		Notes []string `json:"notes"`
	}
	if err := json.Unmarshal([]byte(out), &made); err != nil {
		t.Fatal(err)
	}
	if len(made.Notes) != 1 || !strings.Contains(made.Notes[0], "`.env` is tracked by git: its values are in the repository the agent can read") {
		t.Fatalf("kule new --json notes: %q", made.Notes)
	}
	// The attack: the copy's file is masked, its history is not.
	shown := c.must("exec", made.ID, "--", "sh", "-c", "cat .env; git show HEAD:.env")
	if strings.Count(shown, secret) != 1 {
		t.Fatalf("want the value once (from git show, not from the masked file):\n%s", shown)
	}
	st := c.must("status", made.ID)
	if !strings.Contains(st, "note: `.env` is tracked by git: its values are in the repository the agent can read") || strings.Contains(st, ".env.local") {
		t.Fatalf("kule status does not keep saying it (or says it of an ignored file):\n%s", st)
	}
	if text := c.must("new", folder); !strings.Contains(text, "note: `.env` is tracked by git") {
		t.Fatalf("kule new does not say it:\n%s", text)
	}
}
