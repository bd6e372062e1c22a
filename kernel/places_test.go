package kernel_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kulehq/kule/kernel"
)

func TestParsePlace(t *testing.T) {
	for arg, want := range map[string]string{
		"notes/plan.md":                   "notes/plan.md (the whole file)",
		"notes/plan.md:12-18":             "notes/plan.md lines 12–18",
		"notes/plan.md:12":                "notes/plan.md line 12",
		"notes/plan.md:#Plan › Later":     "notes/plan.md section Plan › Later",
		"notes/plan.md:#Plan/Later":       "notes/plan.md section Plan › Later",
		"budget.xlsx:Sheet1!B2:D9":        "budget.xlsx Sheet1!B2:D9",
		"budget.xlsx:d9:b2":               "budget.xlsx B2:D9",
		"budget.xlsx:$B$2":                "budget.xlsx B2",
		"photos/beach.png:120,40-380,260": "photos/beach.png region 120,40–380,260 (pixels)",
		"report.docx:¶14":                 "report.docx paragraph 14",
		"report.docx:p14":                 "report.docx paragraph 14",
		"odd:name.txt":                    "odd:name.txt (the whole file)",
		"odd:name.txt:3":                  "odd:name.txt line 3",
	} {
		p, err := kernel.ParsePlace(arg)
		if err != nil || p.Name() != want {
			t.Errorf("ParsePlace(%q) = %q, %v; want %q", arg, p.Name(), err, want)
		}
	}
	for _, bad := range []string{"", "../x:1", "/etc/passwd:1-2x", "a.md:0", "a.png:5,5-1,1"} {
		if p, err := kernel.ParsePlace(bad); err == nil && p.Kind != kernel.PlaceFile {
			t.Errorf("ParsePlace(%q) = %+v, want an error", bad, p)
		} else if err == nil && strings.HasPrefix(bad, "..") {
			t.Errorf("ParsePlace(%q) accepted a path outside the copy", bad)
		}
	}
}

func TestDescribeLinesAndLimits(t *testing.T) {
	f := newFixture(t, map[string]string{"notes/plan.md": "# Plan\nweek\n\n## Later\nparty\n"})
	tk := f.newTask()
	p, _ := kernel.ParsePlace("notes/plan.md:2-3")
	ds, err := f.k.DescribePlaces(context.Background(), tk, nil, []kernel.Place{p})
	if err != nil {
		t.Fatal(err)
	}
	got := kernel.AboutPrompt("Tighten this", ds)
	want := "Tighten this\n\nThe person points at these places in the files:\n1. notes/plan.md lines 2–3:\n   2: week\n   3: "
	if got != want {
		t.Errorf("prompt:\n%q\nwant\n%q", got, want)
	}
	many := make([]kernel.Place, kernel.MaxPlaces+1)
	for i := range many {
		many[i] = p
	}
	if _, err := f.k.DescribePlaces(context.Background(), tk, nil, many); !errors.Is(err, kernel.ErrPlace) || !strings.Contains(err.Error(), "at most 20") {
		t.Errorf("21 places: %v", err)
	}
	out, _ := kernel.ParsePlace("notes/plan.md:9-12")
	if _, err := f.k.DescribePlaces(context.Background(), tk, nil, []kernel.Place{out}); !errors.Is(err, kernel.ErrPlace) || !strings.Contains(err.Error(), "has 5 lines") {
		t.Errorf("lines past the end: %v", err)
	}
}

func FuzzParsePlace(f *testing.F) {
	for _, s := range []string{"a.md:1-2", "a.md:#x › y", "b.xlsx:Sheet 1!A1:B2", "c.png:1,2-3,4", "d.docx:¶3", "e:f:g", "a.md:99999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, arg string) {
		p, err := kernel.ParsePlace(arg)
		if err != nil {
			return
		}
		if kernel.CheckRelPath(p.Path) != nil {
			t.Fatalf("ParsePlace(%q) gave a path outside the copy: %q", arg, p.Path)
		}
		if p.Kind == kernel.PlaceLines && (p.From < 1 || p.To < p.From) {
			t.Fatalf("lines %d-%d", p.From, p.To)
		}
		_ = p.Name()
	})
}
