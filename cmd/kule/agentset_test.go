package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// kule agents show says how to point each built-in at another endpoint;
// kule agents set does it without copying the profile, the changed
// profile waits for approval, and base_url= takes it back. Plain http off
// the loopback is refused with the reason.
func TestAgentsSetBaseURL(t *testing.T) {
	home := t.TempDir()
	t.Setenv("KULE_HOME", filepath.Join(home, "kule"))
	t.Setenv("HOME", home)
	for name, env := range map[string]string{"claude-code": "ANTHROPIC_BASE_URL", "codex": "CODEX_CONFIG", "gemini": "GOOGLE_GEMINI_BASE_URL"} {
		out := mustKule(t, "agents", "show", name)
		if !strings.Contains(out, "kule agents set "+name+" base_url=") || !strings.Contains(out, "sets "+env) {
			t.Errorf("kule agents show %s does not say how to point it elsewhere:\n%s", name, out)
		}
	}
	out := mustKule(t, "agents", "set", "claude-code", "base_url=http://localhost:4000")
	for _, want := range []string{`ANTHROPIC_BASE_URL = "http://localhost:4000"`, `ANTHROPIC_API_KEY = ["localhost:4000"]`, `hosts = ["localhost:4000"]`, "kule agents approve claude-code"} {
		if !strings.Contains(out, want) {
			t.Errorf("kule agents set: no %q in\n%s", want, out)
		}
	}
	if out := mustKule(t, "agents", "show", "claude-code"); !strings.Contains(out, "# not approved") || !strings.Contains(out, "set with kule agents set: base_url=http://localhost:4000") {
		t.Errorf("a set built-in must wait for approval and say what was set:\n%s", out)
	}
	mustKule(t, "agents", "approve", "claude-code")
	if out := mustKule(t, "agents", "show", "claude-code"); !strings.Contains(out, "# approved at this content") {
		t.Errorf("after approve:\n%s", out)
	}
	if _, err := kule(t, "agents", "set", "codex", "base_url=http://192.168.1.5:8000/v1"); err == nil || !strings.Contains(err.Error(), "plain http only to this machine's loopback") || !strings.Contains(err.Error(), "nothing was changed") {
		t.Errorf("plain http to the network: err %v", err)
	}
	mustKule(t, "agents", "set", "claude-code", "base_url=")
	if out := mustKule(t, "agents", "show", "claude-code"); !strings.Contains(out, "# built in: needs no approval") || strings.Contains(out, "localhost:4000\"") {
		t.Errorf("after base_url= the profile is as it ships:\n%s", out)
	}
}

// agents add --dry-run makes the checks add makes: a draft that add
// refuses (the registry's gemini takes the built-in's name) is refused by
// the dry run too, and one that add takes is said to be taken.
func TestAgentsAddDryRunAgreesWithAdd(t *testing.T) {
	home := t.TempDir()
	t.Setenv("KULE_HOME", filepath.Join(home, "kule"))
	t.Setenv("HOME", home)
	for _, name := range []string{"gemini", "opencode", "qwen-code"} {
		_, dryErr := kule(t, "agents", "add", name, "--dry-run")
		_, addErr := kule(t, "agents", "add", name)
		if (dryErr == nil) != (addErr == nil) {
			t.Errorf("%s: --dry-run says %v, add says %v", name, dryErr, addErr)
		}
		if dryErr != nil && !strings.Contains(dryErr.Error(), "would refuse this draft") {
			t.Errorf("%s: the dry run's refusal does not say so: %v", name, dryErr)
		}
	}
}
