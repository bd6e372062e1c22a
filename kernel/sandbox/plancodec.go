package sandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// The plan crosses to the helper in a small binary form of its own, not
// JSON: the helper decodes it on the path of every command, and in a fresh
// process encoding/json's first decode took 0.2–0.3 ms (building its
// reflection caches), a tenth of the sandbox's whole setup. The form: the
// magic, then the writer's planShape() (so a helper from another build
// refuses the plan before reading any field), then every field in the
// order of the struct: strings and lists as a uvarint length and their
// bytes or items, numbers as varints, booleans as one byte. The helper that
// reads it is C (pid1_linux.c); a fuzz test holds the two decoders together.

const planMagic = "KSP1"

// errPlanForm is any plan the helper cannot read as this build's.
var errPlanForm = errors.New("not a plan of this build")

func encodePlan(p *plan) []byte {
	e := planEncoder{b: make([]byte, 0, 4096)}
	e.b = append(e.b, planMagic...)
	e.str(p.Shape)
	e.strs(p.Args)
	e.str(p.Dir)
	e.strs(p.Env)
	e.str(p.Copy)
	e.str(p.Tmp)
	e.str(p.Home)
	e.str(p.Cache)
	e.int(p.FSize)
	e.strs(p.Writable)
	e.strs(p.ReadOnly)
	e.strs(p.Keep)
	e.strs(p.Strong)
	e.strs(p.Soft)
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
	e.bool(p.NoTCP)
	e.bool(p.Landlock)
	e.bool(p.AcceptWeaker)
	e.bool(p.PTY)
	e.bool(p.Done)
	return e.b
}

// decodePlan reads what encodePlan wrote, refusing a plan of another shape,
// a truncated one and one with bytes after its end.
func decodePlan(b []byte) (*plan, error) {
	if len(b) < len(planMagic) || string(b[:len(planMagic)]) != planMagic {
		return nil, errPlanForm
	}
	d := planDecoder{b: b[len(planMagic):]}
	p := &plan{Shape: d.str()}
	if d.err == nil && p.Shape != planShape() {
		return nil, errPlanForm
	}
	p.Args = d.strs()
	p.Dir = d.str()
	p.Env = d.strs()
	p.Copy = d.str()
	p.Tmp = d.str()
	p.Home = d.str()
	p.Cache = d.str()
	p.FSize = d.int()
	p.Writable = d.strs()
	p.ReadOnly = d.strs()
	p.Keep = d.strs()
	p.Strong = d.strs()
	p.Soft = d.strs()
	p.HideDirs = d.strs()
	p.HideFiles = d.strs()
	if n := d.count(2); n > 0 {
		p.Links = make([]link, n)
		for i := range p.Links {
			p.Links[i] = link{Path: d.str(), Target: d.str()}
		}
	}
	p.Devices = d.strs()
	p.NetNS = d.bool()
	p.ProxyPort = int(d.int())
	p.NoTCP = d.bool()
	p.Landlock = d.bool()
	p.AcceptWeaker = d.bool()
	p.PTY = d.bool()
	p.Done = d.bool()
	if d.err == nil && len(d.b) > 0 {
		d.err = fmt.Errorf("%d bytes after its end", len(d.b))
	}
	if d.err != nil {
		return nil, fmt.Errorf("%w: %w", errPlanForm, d.err)
	}
	return p, nil
}

type planEncoder struct{ b []byte }

func (e *planEncoder) str(s string) {
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

// planDecoder reads fields until the first error, then returns zero values.
type planDecoder struct {
	b   []byte
	err error
}

func (d *planDecoder) fail(what string) {
	if d.err == nil {
		d.err = errors.New(what)
	}
}

func (d *planDecoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("a length is cut short")
		return 0
	}
	if n != len(binary.AppendUvarint(nil, v)) {
		d.fail("a length is not in its shortest form") // one plan, one form
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a list's length; each item takes at least min bytes, so a
// length the rest cannot hold is refused before anything is allocated.
func (d *planDecoder) count(min int) int {
	n := d.uvarint()
	if n > uint64(len(d.b)/min) {
		d.fail("a list is longer than the plan")
		return 0
	}
	return int(n)
}

func (d *planDecoder) str() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.fail("a string is longer than the plan")
		return ""
	}
	s := string(d.b[:n])
	if strings.IndexByte(s, 0) >= 0 {
		// No path, argument or variable can hold one; the C helper reads
		// strings as C does.
		d.fail("a string holds a NUL byte")
		return ""
	}
	d.b = d.b[n:]
	return s
}

func (d *planDecoder) strs() []string {
	n := d.count(1)
	if n == 0 {
		return nil
	}
	l := make([]string, n)
	for i := range l {
		l[i] = d.str()
	}
	return l
}

func (d *planDecoder) int() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("a number is cut short")
		return 0
	}
	if n != len(binary.AppendVarint(nil, v)) {
		d.fail("a number is not in its shortest form")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *planDecoder) bool() bool {
	if d.err != nil {
		return false
	}
	if len(d.b) == 0 {
		d.fail("a flag is cut short")
		return false
	}
	v := d.b[0]
	d.b = d.b[1:]
	if v > 1 {
		d.fail("a flag is neither 0 nor 1")
	}
	return v == 1
}
