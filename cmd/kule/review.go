package main

import (
	"fmt"
	"io"

	"github.com/kulehq/kule/kernel"
)

// namesView is what kule status adds to a task's changes (kernel.ReviewNames
// finds it; this file only prints it).
type namesView = kernel.Names

// printNames prints the entities that changed inside one file, under its
// effect line; a file the differ could not read says why.
func printNames(w io.Writer, f kernel.ReviewFile) {
	if f.Note != "" {
		fmt.Fprintf(w, "      (changed as a whole: %s)\n", safeLine(f.Note))
	}
	for _, e := range f.Entities {
		fmt.Fprintf(w, "      %s\n", safeLine(fmt.Sprint(e)))
	}
}

// printMeets prints where the task meets others and the person's own edits,
// then plugin notices.
func printMeets(w io.Writer, v *namesView) {
	if v == nil {
		return
	}
	for _, m := range v.Meets {
		fmt.Fprintln(w, safeLine(m.Line))
	}
	for _, n := range v.Notices {
		fmt.Fprintln(w, "note: "+safeLine(n))
	}
}
