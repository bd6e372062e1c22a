package sandbox

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// The plan crosses to the helper in a small binary form of its own: the
// helper that reads it is C (pid1_linux.c), before any runtime starts, and
// a form this plain takes a page of C to read whole and strictly. The form:
// the magic, then the writer's planShape() (so a helper from another build
// refuses the plan before reading any field), then every field that
// crosses (onWire) in the order of the struct: strings and lists as a
// uvarint length and their bytes or items, numbers as varints, booleans as
// one byte. The Go decoder in plancodec_test.go is the reference a fuzz
// test holds the C one to.

const planMagic = "KSP1"

// encodePlan is the plan in its form, framed by its length (4 bytes, little
// endian) as it goes to the helper. A string with a NUL byte (a path, an
// argument, a variable: none can hold one, and the helper's C strings end
// there) refuses the plan as a bad spec.
func encodePlan(p *plan) ([]byte, error) {
	b, nul := planBytes(p, 4)
	if nul != "" {
		return nil, fmt.Errorf("%w: %q holds a NUL byte, which no path, argument or environment variable can; nothing ran", ErrBadSpec, nul)
	}
	binary.LittleEndian.PutUint32(b, uint32(len(b)-4))
	return b, nil
}

// planBytes is the plan's form after room bytes left for a frame, and the
// first string in it that holds a NUL byte ("" when none does).
func planBytes(p *plan, room int) (b []byte, nul string) {
	e := planEncoder{b: make([]byte, room, 4096)}
	e.b = append(e.b, planMagic...)
	e.str(p.Shape)
	e.strs(p.Args)
	e.str(p.Dir)
	e.strs(p.Env)
	e.str(p.Copy)
	e.str(p.Tmp)
	e.str(p.Home)
	e.str(p.Cache)
	e.str(p.Upper)
	e.str(p.Work)
	e.int(p.FSize)
	e.strs(p.Writable)
	e.strs(p.ReadOnly)
	e.strs(p.Keep)
	e.strs(p.HideDirs)
	e.strs(p.HideFiles)
	e.b = binary.AppendUvarint(e.b, uint64(len(p.Links)))
	for _, l := range p.Links {
		e.str(l.Path)
		e.str(l.Target)
	}
	e.strs(p.Devices)
	e.bool(p.NetNS)
	e.int(int64(p.ProxyPort))
	e.int(p.Landlock.HandledFS)
	e.int(p.Landlock.HandledNet)
	e.int(p.Landlock.Scoped)
	e.b = binary.AppendUvarint(e.b, uint64(len(p.Landlock.Rules)))
	for _, r := range p.Landlock.Rules {
		e.str(r.Path)
		e.int(r.Access)
		e.int(int64(r.Port))
		e.bool(r.Optional)
	}
	e.int(int64(p.Seccomp))
	e.bool(p.PTY)
	return e.b, e.nul
}

type planEncoder struct {
	b   []byte
	nul string // the first string with a NUL byte
}

func (e *planEncoder) str(s string) {
	if e.nul == "" && strings.IndexByte(s, 0) >= 0 {
		e.nul = s
	}
	e.b = binary.AppendUvarint(e.b, uint64(len(s)))
	e.b = append(e.b, s...)
}

func (e *planEncoder) strs(l []string) {
	e.b = binary.AppendUvarint(e.b, uint64(len(l)))
	for _, s := range l {
		e.str(s)
	}
}

func (e *planEncoder) int(n int64) { e.b = binary.AppendVarint(e.b, n) }

func (e *planEncoder) bool(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}
