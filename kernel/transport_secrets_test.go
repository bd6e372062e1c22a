package kernel_test

import (
	"context"
	"strings"
	"testing"

	"github.com/kulehq/kule/kernel"
)

// TestTaskProxyNeverHoldsTransportTokens: a chat bot's token is a kept
// secret for the chat service's hosts, but no task's proxy is handed it,
// so no command in a task can have it sent to the service (and post or
// read the channel as the bot). With the guard off, the task's commands
// get its placeholder and the proxy would send the token.
func TestTaskProxyNeverHoldsTransportTokens(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "") // the key file
	for _, guard := range []bool{true, false} {
		f := newFixture(t, map[string]string{"a.txt": "a\n"})
		tk := f.newTask()
		st, err := kernel.OpenSecrets(f.k.Store().Root)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Add(kernel.TransportSecretPrefix+"SLACK_BOT", "xoxb-real-bot-token", []string{"slack.com"}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Add("STRIPE_KEY", "sk_live_x", []string{"api.stripe.com"}); err != nil {
			t.Fatal(err)
		}
		undo := kernel.SetHideTransportSecrets(guard)
		p, err := f.k.StartProxy(context.Background(), tk, kernel.ProxyOptions{})
		undo()
		if err != nil {
			t.Fatal(err)
		}
		env := strings.Join(p.SecretEnv(), "\n")
		p.Close()
		if !strings.Contains(env, "STRIPE_KEY=") {
			t.Fatalf("guard %v: the task's own secret is missing: %s", guard, env)
		}
		has := strings.Contains(env, kernel.TransportSecretPrefix+"SLACK_BOT=")
		if guard && has {
			t.Fatalf("a task's proxy holds the transport's token: %s", env)
		}
		if !guard && !has {
			t.Fatal("with the guard off the task's proxy has no transport token either: the test shows nothing")
		}
	}
}
