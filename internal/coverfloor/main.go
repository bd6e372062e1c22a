// Command coverfloor reads the output of `go test -cover`, prints each
// package's coverage on one line sorted by import path, and exits non-zero
// when a package that guards the person's folder is below its floor, is
// missing from the run, or when any package's tests failed.
//
// `make cover` runs it as
//
//	go test -cover ./... > bin/cover.out; go run ./internal/coverfloor < bin/cover.out
//
// A guarded package is named by the last element of its import path inside
// kernel/ (apply, effects, scan, task, checkpoint, gitstate), so it still
// counts when it moves between kernel/ and kernel/internal/.
package main

import (
	"fmt"
	"os"
)

func main() {
	rep, err := Parse(os.Stdin)
	if err != nil {
		fmt.Fprintf(os.Stderr, "coverfloor: %v\n", err)
		os.Exit(2)
	}
	if _, err := os.Stdout.WriteString(rep.Table(Floors)); err != nil {
		fmt.Fprintf(os.Stderr, "coverfloor: write the table: %v\n", err)
		os.Exit(2)
	}
	if problems := rep.Check(Floors); len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintf(os.Stderr, "coverfloor: %s\n", p)
		}
		fmt.Fprintln(os.Stderr, "coverfloor: these packages guard the person's folder; add tests to those named above, then run make cover again")
		os.Exit(1)
	}
}
