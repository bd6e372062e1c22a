package transport

import (
	"context"
	"fmt"
	"testing"
)

// TestInbox: items come out by cursor, an old cursor replays, a wait with
// nothing new returns nothing, and the oldest items go past the bound.
func TestInbox(t *testing.T) {
	t.Parallel()
	b := NewInbox(3)
	ctx := context.Background()
	got, err := b.Receive(ctx, "", 0)
	if err != nil || len(got.Incoming) != 0 || got.Cursor != "0" {
		t.Fatalf("empty inbox: %+v, %v", got, err)
	}
	for _, s := range []string{"a", "b"} {
		b.Push(Incoming{Text: s})
	}
	got, _ = b.Receive(ctx, "0", 1000)
	if len(got.Incoming) != 2 || got.Cursor != "2" {
		t.Fatalf("after two: %+v", got)
	}
	again, _ := b.Receive(ctx, "1", 0)
	if len(again.Incoming) != 1 || again.Incoming[0].Text != "b" {
		t.Fatalf("replay from 1: %+v", again)
	}
	none, _ := b.Receive(ctx, got.Cursor, 10)
	if len(none.Incoming) != 0 || none.Cursor != "2" {
		t.Fatalf("nothing new: %+v", none)
	}
	for _, s := range []string{"c", "d", "e"} {
		b.Push(Incoming{Text: s})
	}
	old, _ := b.Receive(ctx, "0", 0)
	if len(old.Incoming) != 3 || old.Incoming[0].Text != "c" || old.Cursor != "5" {
		t.Fatalf("past the bound: %+v", old)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.Receive(cctx, "5", 10000); err == nil {
		t.Fatal("a cancelled wait returned no error")
	}
}

func TestEventCheck(t *testing.T) {
	t.Parallel()
	if (Event{}).Check() == nil || (Event{Notice: &Notice{}, File: &File{}}).Check() == nil {
		t.Fatal("an event with no body or two passed")
	}
	if (Event{Question: &Question{Text: "?"}}).Check() != nil {
		t.Fatal("a question did not pass")
	}
}

// ExampleInbox: a transport's chat client pushes what people write; the
// host receives it by cursor.
func ExampleInbox() {
	in := NewInbox(0)
	in.Push(Incoming{Author: "U1", Text: "~/notes: tidy the drafts"})
	b, _ := in.Receive(context.Background(), "", 0)
	fmt.Println(b.Incoming[0].Text, b.Cursor)
	// Output: ~/notes: tidy the drafts 1
}
