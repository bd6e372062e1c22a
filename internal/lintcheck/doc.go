// Package lintcheck holds the test that `make lint` fails on a file gofmt
// would change and on a staticcheck finding, and passes on clean code; it
// has no code of its own.
package lintcheck
