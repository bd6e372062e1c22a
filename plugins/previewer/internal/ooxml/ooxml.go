// Package ooxml opens Office Open XML packages (.xlsx, .docx) in memory for
// the previewers: a ZIP read from bytes, never unpacked to disk, whose every
// part is inflated through a cap before anything parses it. A zip bomb (a
// part that inflates past its cap, or parts that do in all), a package of
// too many parts, and a file that is not a ZIP from its first byte (a
// picture that is also a ZIP) are refused with the reason.
package ooxml

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/kulehq/kule/sdk/previewer"
)

// Limits of a package.
const (
	// MaxPart is the most bytes one part may inflate to.
	MaxPart = 32 << 20
	// MaxTotal is the most bytes all parts together may inflate to.
	MaxTotal = 96 << 20
	// MaxParts is the most parts a package may hold.
	MaxParts = 10_000
)

// capsOff turns the inflation caps off, for the tests that show a zip bomb
// doing harm without them; partCap and totalCap are the caps in force
// (tests lower them to keep their bombs small).
var (
	capsOff  bool
	partCap  int64 = MaxPart
	totalCap int64 = MaxTotal
)

// Package is an opened, checked package.
type Package struct {
	z     *zip.Reader
	parts map[string]*zip.File
	// Inflated is how many bytes the check inflated, all parts together.
	Inflated int64
}

func refuse(format string, args ...any) error {
	return fmt.Errorf("%w: %s", previewer.ErrCannotPreview, fmt.Sprintf(format, args...))
}

// Open reads data as a package and inflates every part once through its
// cap (into nothing), so no later read can be a bomb.
func Open(data []byte, what string) (*Package, error) {
	if !bytes.HasPrefix(data, []byte("PK\x03\x04")) {
		return nil, refuse("not an %s file (it does not start as a ZIP package)", what)
	}
	z, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, refuse("damaged or truncated %s file (%v)", what, err)
	}
	if len(z.File) > MaxParts && !capsOff {
		return nil, refuse("%s package of %d parts, more than %d", what, len(z.File), MaxParts)
	}
	p := &Package{z: z, parts: map[string]*zip.File{}}
	for _, f := range z.File {
		if _, dup := p.parts[f.Name]; dup {
			return nil, refuse("%s package holds the part %q twice", what, f.Name)
		}
		p.parts[f.Name] = f
		w := io.Writer(io.Discard)
		var xmlPart bytes.Buffer
		isXML := strings.HasSuffix(f.Name, ".xml") || strings.HasSuffix(f.Name, ".rels")
		if isXML {
			w = &xmlPart
		}
		n, err := inflate(f, w, partCap)
		p.Inflated += n
		if err != nil {
			return nil, err
		}
		if isXML {
			if err := RefuseDTD(f.Name, xmlPart.Bytes()); err != nil {
				return nil, err
			}
		}
		if p.Inflated > totalCap && !capsOff {
			return nil, refuse("%s package inflates past %d MiB in all (a zip bomb?)", what, totalCap>>20)
		}
	}
	return p, nil
}

// inflate copies part f to w, at most limit bytes, and says how many.
func inflate(f *zip.File, w io.Writer, limit int64) (int64, error) {
	if f.UncompressedSize64 > uint64(limit) && !capsOff {
		return 0, refuse("part %s would inflate to %d bytes, more than %d MiB (a zip bomb?)", f.Name, f.UncompressedSize64, limit>>20)
	}
	rc, err := f.Open()
	if err != nil {
		return 0, refuse("part %s cannot be read (%v)", f.Name, err)
	}
	defer rc.Close()
	r := io.Reader(rc)
	if !capsOff {
		r = io.LimitReader(rc, limit+1)
	}
	n, err := io.Copy(w, r)
	if err != nil {
		return n, refuse("part %s is damaged (%v)", f.Name, err)
	}
	if n > limit && !capsOff {
		return n, refuse("part %s inflates past %d MiB (a zip bomb?)", f.Name, limit>>20)
	}
	return n, nil
}

// ErrNoPart is returned by Part for a part the package lacks.
var ErrNoPart = errors.New("no such part")

// Part returns the inflated bytes of the part name.
func (p *Package) Part(name string) ([]byte, error) {
	f, ok := p.parts[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNoPart, name)
	}
	var buf bytes.Buffer
	if _, err := inflate(f, &buf, partCap); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Has says whether the package holds the part name.
func (p *Package) Has(name string) bool {
	_, ok := p.parts[name]
	return ok
}

// Names are the package's part names.
func (p *Package) Names() []string {
	out := make([]string, 0, len(p.parts))
	for _, f := range p.z.File {
		out = append(out, f.Name)
	}
	return out
}

// RefuseDTD refuses an XML part that declares a document type: Office
// never writes one, and it is how entity expansion ("billion laughs") and
// external entities come in. encoding/xml expands neither, so this is a
// second wall that also gives the person a reason.
func RefuseDTD(part string, data []byte) error {
	head := data
	if len(head) > 4096 {
		head = head[:4096]
	}
	if bytes.Contains(bytes.ToUpper(head), []byte("<!DOCTYPE")) || bytes.Contains(data, []byte("<!ENTITY")) {
		return refuse("part %s declares a document type or entities (XML entity expansion and external entities are refused)", part)
	}
	return nil
}

// Refuse wraps a reason as the previewer's refusal.
func Refuse(format string, args ...any) error { return refuse(format, args...) }
