// Package planted holds one staticcheck finding of each kind Kule's tree had.
package planted

import "os"

// Same compares a value with itself (SA4000).
func Same(a int) bool { return a != a }

// Dropped drops the error of a write (SA4006: the first error is overwritten unread).
func Dropped(f *os.File) error {
	_, err := f.Write([]byte("x"))
	_, err = f.Write([]byte("y"))
	return err
}
