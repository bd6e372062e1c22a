package previewertest

import (
	"context"
	"errors"
	"testing"

	"github.com/kulehq/kule/sdk/previewer"
)

type broken struct{ how string }

func (broken) Name() string        { return "broken" }
func (broken) Accepts(string) bool { return true }
func (b broken) Preview(_ context.Context, req previewer.Request) (previewer.Response, error) {
	switch b.how {
	case "panic":
		panic("boom")
	case "garbage":
		return previewer.Response{Blocks: []previewer.Block{{}}}, nil
	case "plain error":
		return previewer.Response{}, errors.New("no")
	}
	return previewer.Response{Kind: "text", Blocks: []previewer.Block{{Line: &previewer.Line{Number: 1, Text: "ok"}}}}, nil
}

// TestCheckCatchesBrokenPreviewers: the kit can fail.
func TestCheckCatchesBrokenPreviewers(t *testing.T) {
	if err := Check(broken{}, "a.x", []byte("a")); err != nil {
		t.Fatalf("a good previewer: %v", err)
	}
	for how, want := range map[string]error{"panic": ErrPanic, "garbage": ErrContract, "plain error": ErrContract} {
		if err := Check(broken{how: how}, "a.x", []byte("a")); !errors.Is(err, want) {
			t.Errorf("%s: Check = %v, want %v", how, err, want)
		}
	}
}
