//go:build !linux

package bigalloc

func advise([]byte) {}
