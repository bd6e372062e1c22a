package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSandboxSectionRoundTrip(t *testing.T) {
	root := t.TempDir()
	c := &Config{}
	c.Sandbox.AcceptWeaker = true
	if !c.Sandbox.AddReveal("/home/p/code/proj", "/home/p/code/shared") || c.Sandbox.AddReveal("/home/p/code/proj/", "/home/p/code/shared") {
		t.Fatal("AddReveal: want true then false")
	}
	c.Sandbox.AddReveal("/home/p/code/proj", "/home/p/code/ui")
	if err := Save(root, c); err != nil {
		t.Fatal(err)
	}
	got, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(c, got); d != "" {
		t.Fatalf("round trip (-want +got):\n%s", d)
	}
	if !got.Sandbox.RemoveReveal("/home/p/code/proj", "/home/p/code/shared") || got.Sandbox.RemoveReveal("/home/p/code/proj", "/home/p/code/shared") {
		t.Fatal("RemoveReveal: want true then false")
	}
	if d := cmp.Diff([]string{"/home/p/code/ui"}, got.Sandbox.RevealsFor("/home/p/code/proj")); d != "" {
		t.Fatal(d)
	}
}
