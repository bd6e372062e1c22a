//go:build !unix

package proxy

// oNoFollow: O_EXCL alone refuses whatever is at the path here.
const oNoFollow = 0
