package agentrun_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/kulehq/kule/kernel/agentrun"
	"github.com/kulehq/kule/kernel/internal/proxy"
	"github.com/kulehq/kule/kernel/internal/runner"
	"github.com/kulehq/kule/kernel/internal/secrets"
)

// A profile names model.test for TEST_KEY; the person kept TEST_KEY for
// kept.test alone. The proxy must never be told to send it to model.test.
func TestKeptKeyGoesOnlyToItsHosts(t *testing.T) {
	t.Setenv("KULE_SECRETS_KEYFILE", "1")
	for _, guard := range []bool{true, false} {
		name := "guarded"
		if !guard {
			name = "guard off"
		}
		t.Run(name, func(t *testing.T) {
			*agentrun.KeptOnly = guard
			defer func() { *agentrun.KeptOnly = true }()
			f := newFixture(t, "write")
			f.approve(t)
			st, err := secrets.Open(f.k.Store().Root)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Add("TEST_KEY", "kept-value-for-kept-test", []string{"kept.test"}); err != nil {
				t.Fatal(err)
			}
			var sent []string // hosts the proxy puts the kept value in at
			o := f.options("hi")
			o.Runner = runner.Direct{}
			var notes strings.Builder
			o.Stderr = &notes
			o.Proxy = func(c *proxy.Config) {
				for _, s := range c.Secrets {
					if s.Value == "kept-value-for-kept-test" {
						sent = append(sent, s.Hosts...)
					}
				}
			}
			r, err := agentrun.Start(context.Background(), f.k, f.t, o)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Wait(); err != nil {
				t.Fatal(err)
			}
			leaked := slices.Contains(sent, "model.test")
			if guard && leaked {
				t.Fatalf("the kept key is sent to %v; it was kept for kept.test only", sent)
			}
			if !guard && !leaked {
				t.Fatalf("with the guard off the key should reach model.test (the attack), it goes to %v", sent)
			}
			if guard {
				if !slices.Contains(sent, "kept.test") {
					t.Errorf("the kept key goes to %v, not to kept.test", sent)
				}
				if !strings.Contains(notes.String(), "TEST_KEY is a kept secret for kept.test only: it is not sent to model.test") {
					t.Errorf("the person is not told: %q", notes.String())
				}
			}
		})
	}
}
