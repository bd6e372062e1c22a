//go:build !linux

package pluginhost

func sandboxOK() bool { return false }
