package kernel

// SetFolderGuardForTest turns CheckTaskFolder's call in NewTask off or on,
// and returns what puts it back.
func SetFolderGuardForTest(on bool) (restore func()) {
	old := folderGuard
	folderGuard = on
	return func() { folderGuard = old }
}
