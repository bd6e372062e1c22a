package ooxml

import (
	"archive/zip"
	"bytes"
	"io"
)

// Part is one part of a package Build makes.
type Part struct {
	Name string
	Data []byte
	// Zeros, when set, is a part of that many zero bytes, deflated as it is
	// written (a zip bomb needs no memory to make).
	Zeros int64
}

// Build makes a package of parts, for tests and benchmarks.
func Build(parts ...Part) []byte {
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	for _, p := range parts {
		w, err := z.Create(p.Name)
		if err != nil {
			panic(err)
		}
		if p.Zeros > 0 {
			if _, err := io.CopyN(w, zeroReader{}, p.Zeros); err != nil {
				panic(err)
			}
			continue
		}
		if _, err := w.Write(p.Data); err != nil {
			panic(err)
		}
	}
	if err := z.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

type zeroReader struct{}

func (zeroReader) Read(b []byte) (int, error) {
	clear(b)
	return len(b), nil
}

// CapsOffForTest turns the inflation caps off until the returned function
// is called, so a test can show a zip bomb doing harm without them.
func CapsOffForTest() (restore func()) {
	capsOff = true
	return func() { capsOff = false }
}

// SmallCapsForTest lowers the caps to part and total bytes until the
// returned function is called.
func SmallCapsForTest(part, total int64) (restore func()) {
	partCap, totalCap = part, total
	return func() { partCap, totalCap = MaxPart, MaxTotal }
}
