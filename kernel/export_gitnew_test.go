package kernel

// SetRefuseNewRepos turns the refusal of a new repository's files off (for
// a test that shows what it prevents) and returns the previous setting.
func SetRefuseNewRepos(on bool) bool {
	old := refuseNew
	refuseNew = on
	return old
}
