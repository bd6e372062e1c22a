package differtest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kulehq/kule/sdk/differ"
)

// fake is a differ whose entities the test sets, to prove Check catches each
// broken rule.
type fake struct {
	es    []differ.Entity
	panic bool
	hang  bool
	flip  *bool // alternate results between calls
}

func (fake) Name() string        { return "fake" }
func (fake) Accepts(string) bool { return true }
func (f fake) Entities(ctx context.Context, _ differ.EntitiesRequest) (differ.EntitiesResponse, error) {
	if f.panic {
		panic("boom")
	}
	if f.hang {
		<-make(chan struct{})
	}
	if f.flip != nil {
		*f.flip = !*f.flip
		if *f.flip {
			return differ.EntitiesResponse{Entities: f.es[:1]}, nil
		}
	}
	return differ.EntitiesResponse{Entities: f.es}, nil
}

func TestCheck(t *testing.T) {
	src := []byte("0123456789")
	ent := func(kind, name string, s, e int, parent string) differ.Entity {
		return differ.Entity{Kind: kind, Name: name, Start: s, End: e, Parent: parent}
	}
	tests := map[string]struct {
		d    fake
		want error // nil, or the sentinel
		msg  string
	}{
		"good nested":          {d: fake{es: []differ.Entity{ent("class", "A", 0, 8, ""), ent("method", "A.f", 1, 3, "A"), ent("method", "A.g", 3, 8, "A")}}},
		"out of range":         {d: fake{es: []differ.Entity{ent("func", "f", 0, 11, "")}}, want: ErrContract, msg: "outside"},
		"negative":             {d: fake{es: []differ.Entity{ent("func", "f", -1, 2, "")}}, want: ErrContract, msg: "outside"},
		"duplicate":            {d: fake{es: []differ.Entity{ent("func", "f", 0, 2, ""), ent("func", "f", 3, 4, "")}}, want: ErrContract, msg: "two entities"},
		"empty name":           {d: fake{es: []differ.Entity{ent("func", "", 0, 2, "")}}, want: ErrContract, msg: "empty"},
		"not in order":         {d: fake{es: []differ.Entity{ent("func", "g", 5, 6, ""), ent("func", "f", 0, 2, "")}}, want: ErrContract, msg: "file order"},
		"missing parent":       {d: fake{es: []differ.Entity{ent("method", "A.f", 1, 3, "A")}}, want: ErrContract, msg: "not an entity"},
		"child outside parent": {d: fake{es: []differ.Entity{ent("class", "A", 0, 4, ""), ent("method", "A.f", 3, 6, "A")}}, want: ErrContract, msg: "outside its parent"},
		"siblings overlap":     {d: fake{es: []differ.Entity{ent("func", "f", 0, 5, ""), ent("func", "g", 4, 8, "")}}, want: ErrContract, msg: "overlaps"},
		"unstable":             {d: fake{es: []differ.Entity{ent("func", "f", 0, 2, ""), ent("func", "g", 3, 4, "")}, flip: new(bool)}, want: ErrContract, msg: "different entities"},
		"panic":                {d: fake{panic: true}, want: ErrPanic, msg: "boom"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := Check(tc.d, "f", src)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("Check = %v, want %v containing %q", err, tc.want, tc.msg)
			}
		})
	}
}

func TestCheckHang(t *testing.T) {
	old := Timeout
	Timeout = 50 * time.Millisecond
	defer func() { Timeout = old }()
	if err := Check(fake{hang: true}, "f", nil); !errors.Is(err, ErrHang) {
		t.Fatalf("Check on a hanging differ = %v, want ErrHang", err)
	}
}

// badMerger loses one side.
type badMerger struct{ fake }

func (badMerger) Merge(_ context.Context, req differ.MergeRequest) (differ.MergeResponse, error) {
	return differ.MergeResponse{Merged: req.Base}, nil
}

func TestCheckMerge(t *testing.T) {
	err := CheckMerge(badMerger{}, "f", []byte("a"), []byte("b"))
	if !errors.Is(err, ErrContract) || !strings.Contains(err.Error(), "ours only") {
		t.Fatalf("CheckMerge on a merger that drops our side = %v, want ErrContract naming 'ours only'", err)
	}
}
