package previewer

import (
	"errors"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	line := func(n int, s string) Block { return Block{Line: &Line{Number: n, Text: s}} }
	ok := Response{Kind: KindText, Blocks: []Block{line(1, "a"), {Row: &Row{Number: 1, Cells: []string{"x"}, Formulas: []string{"SUM(A1)"}}}, {Image: &Image{Format: "png", Width: 1, Height: 1}}}}
	if err := Validate(ok, DefaultMaxBlocks); err != nil {
		t.Fatalf("a valid response: %v", err)
	}
	for name, r := range map[string]Response{
		"empty block":      {Blocks: []Block{{}}},
		"two pieces":       {Blocks: []Block{{Line: &Line{Number: 1}, Heading: &Heading{Level: 1}}}},
		"heading level 9":  {Blocks: []Block{{Heading: &Heading{Level: 9}}}},
		"line 0":           {Blocks: []Block{line(0, "a")}},
		"not utf-8":        {Blocks: []Block{line(1, "\xff")}},
		"more than asked":  {Blocks: []Block{line(1, "a"), line(2, "b"), line(3, "c")}},
		"formulas > cells": {Blocks: []Block{{Row: &Row{Number: 1, Formulas: []string{"x"}}}}},
		"picture of 0 px":  {Blocks: []Block{{Image: &Image{Format: "png"}}}},
		"too much text":    {Blocks: []Block{line(1, strings.Repeat("x", MaxText+1))}},
		"bad note":         {Notes: []string{"\xfe"}},
	} {
		if err := Validate(r, 2); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Validate = %v, want ErrInvalid", name, err)
		}
	}
}
