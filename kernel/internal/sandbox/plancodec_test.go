package sandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// The Go decoder of the plan: kule never reads a plan (the helper that does
// is C), but this is the reference the C decoder is held to
// (plancodec_cgo_linux_test.go) and the proof that encodePlan writes what
// it means to.

// errPlanForm is any plan the helper cannot read as this build's.
var errPlanForm = errors.New("not a plan of this build")

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
	p.Upper = d.str()
	p.Work = d.str()
	p.FSize = d.int()
	p.Writable = d.strs()
	p.ReadOnly = d.strs()
	p.Keep = d.strs()
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
	p.Landlock.HandledFS = d.int()
	p.Landlock.HandledNet = d.int()
	p.Landlock.Scoped = d.int()
	if n := d.count(4); n > 0 {
		p.Landlock.Rules = make([]landlockRule, n)
		for i := range p.Landlock.Rules {
			p.Landlock.Rules[i] = landlockRule{Path: d.str(), Access: d.int(), Port: int(d.int()), Optional: d.bool()}
		}
	}
	p.Seccomp = int(d.int())
	p.PTY = d.bool()
	if d.err == nil && len(d.b) > 0 {
		d.err = fmt.Errorf("%d bytes after its end", len(d.b))
	}
	if d.err != nil {
		return nil, fmt.Errorf("%w: %w", errPlanForm, d.err)
	}
	return p, nil
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
	u := d.uvarint()
	if d.err != nil {
		// Said of a length by uvarint: this one is a number.
		d.err = errors.New(strings.Replace(d.err.Error(), "a length", "a number", 1))
		return 0
	}
	return int64(u>>1) ^ -int64(u&1) // zigzag, as binary.Varint
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

// fullPlan sets every field of a plan to something other than its zero
// value, by reflection: a field added to plan but not to the codec makes
// TestPlanRoundTrip fail.
func fullPlan(t testing.TB) *plan {
	p := &plan{}
	v := reflect.ValueOf(p).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if !onWire(v.Type().Field(i)) {
			continue // stays on kule's side
		}
		switch f.Kind() {
		case reflect.String:
			f.SetString(v.Type().Field(i).Name + " ✓ /a b")
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(1000 + i))
		case reflect.Struct:
			if f.Type() != reflect.TypeOf(landlockRuleset{}) {
				t.Fatalf("plan field %s: a struct the test does not fill", v.Type().Field(i).Name)
			}
			f.Set(reflect.ValueOf(landlockRuleset{HandledFS: 1<<16 - 1, HandledNet: 2, Scoped: 3, Rules: []landlockRule{
				{Path: "/", Access: 13}, {Path: "/dev/ptmx ✓", Access: 1<<15 | 7, Optional: true}, {Port: 8080, Access: 2}, {}}}))
		case reflect.Slice:
			switch f.Type().Elem().Kind() {
			case reflect.String:
				f.Set(reflect.ValueOf([]string{"", "/x", "é\tz"}))
			case reflect.Struct:
				f.Set(reflect.ValueOf([]link{{Path: "/l", Target: "/t"}, {}}))
			default:
				t.Fatalf("plan field %s: a slice the test does not fill", v.Type().Field(i).Name)
			}
		default:
			t.Fatalf("plan field %s: a kind the test does not fill", v.Type().Field(i).Name)
		}
	}
	p.Shape = planShape()
	return p
}

func TestPlanRoundTrip(t *testing.T) {
	p := fullPlan(t)
	got, err := decodePlan(wire(p))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, p) {
		t.Fatalf("decoded plan differs:\n got %+v\nwant %+v", got, p)
	}
	// Empty lists come back empty, not as lists of one empty item.
	small := &plan{Args: []string{"true"}, Shape: planShape()}
	got, err = decodePlan(wire(small))
	if err != nil || len(got.Args) != 1 || got.Env != nil || got.Links != nil {
		t.Fatalf("small plan: %+v, %v", got, err)
	}
}

// refusedPlans are forms no decoder may read, the Go one and the C one:
// a helper from another build, a plan cut short, bytes after its end.
func refusedPlans(tb testing.TB) map[string][]byte {
	p := fullPlan(tb)
	b := wire(p)
	other := *p
	other.Shape = "Args:[]string;"
	return map[string][]byte{
		"empty":         nil,
		"no magic":      append([]byte("KSP0"), b[4:]...),
		"another build": wire(&other),
		"cut short":     b[:len(b)-1],
		"cut in half":   b[:len(b)/2],
		"trailing":      append(append([]byte(nil), b...), 0),
		"flag of 2":     append(append([]byte(nil), b[:len(b)-1]...), 2),
		"a NUL byte":    wire(&plan{Args: []string{"tr", "a\x00b"}, Shape: planShape()}),
		"long form":     []byte(planMagic + "\x80\x00"),
		"overflow":      []byte(planMagic + "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"),
	}
}

// The helper never acts on half a plan, nor on another build's.
func TestPlanRefused(t *testing.T) {
	for name, in := range refusedPlans(t) {
		if got, err := decodePlan(in); err == nil || !errors.Is(err, errPlanForm) {
			t.Errorf("%s: decoded (%v, %v), want errPlanForm", name, got, err)
		}
	}
	// One plan has one form: a length written long is refused as such.
	if _, err := decodePlan([]byte(planMagic + "\x80\x00")); err == nil || !strings.Contains(err.Error(), "shortest form") {
		t.Errorf("a long-written length: %v, want it refused for its form", err)
	}
}

func FuzzDecodePlan(f *testing.F) {
	f.Add(wire(fullPlan(f)))
	f.Add(wire(&plan{Args: []string{"true"}, Shape: planShape()}))
	for _, b := range refusedPlans(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodePlan(b)
		if err != nil {
			return
		}
		// Whatever decodes encodes back to the same bytes.
		if again := wire(p); string(again) != string(b) {
			t.Fatalf("decode then encode changed the plan: %x -> %x", b, again)
		}
	})
}

// wire is p's form as the decoders read it (unframed), whatever it holds:
// a NUL byte too, which encodePlan refuses before it is ever sent.
func wire(p *plan) []byte {
	b, _ := planBytes(p, 0)
	return b
}
