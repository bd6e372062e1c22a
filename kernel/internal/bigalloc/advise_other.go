//go:build !linux

package bigalloc

func advise(start, length uintptr) {}
