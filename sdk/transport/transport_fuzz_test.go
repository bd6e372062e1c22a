package transport

import (
	"context"
	"strconv"
	"testing"
)

// FuzzInboxCursor: any cursor a host passes back (it is the plugin's own
// word, but a host may hold a stale or damaged one) yields a batch and a
// cursor that parses, never a panic, and never more than what was pushed.
func FuzzInboxCursor(f *testing.F) {
	for _, s := range []string{"", "0", "3", "-1", "99999999999999999999", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cursor string) {
		b := NewInbox(4)
		for i := range 6 {
			b.Push(Incoming{Text: strconv.Itoa(i)})
		}
		got, err := b.Receive(context.Background(), cursor, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Incoming) > 4 {
			t.Fatalf("%d items from an inbox of 4", len(got.Incoming))
		}
		if _, err := strconv.Atoi(got.Cursor); err != nil {
			t.Fatalf("cursor %q does not parse", got.Cursor)
		}
	})
}

// FuzzParsePluginConfig: whatever the environment holds, the parse either
// fails or gives a channel and a bot placeholder.
func FuzzParsePluginConfig(f *testing.F) {
	f.Add(`{"channel":"C1","bot":"kule-secret-X-00","app":"kule-secret-Y-00","ca":"-----BEGIN"}`)
	f.Add(`{"channel":""}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, raw string) {
		c, err := ParsePluginConfig(raw)
		if err == nil && (c.Channel == "" || c.Bot == "") {
			t.Fatalf("%q parsed to %+v without an error", raw, c)
		}
	})
}
