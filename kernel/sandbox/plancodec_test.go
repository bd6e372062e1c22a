package sandbox

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// fullPlan sets every field of a plan to something other than its zero
// value, by reflection: a field added to plan but not to the codec makes
// TestPlanRoundTrip fail.
func fullPlan(t testing.TB) *plan {
	p := &plan{}
	v := reflect.ValueOf(p).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(v.Type().Field(i).Name + " ✓ /a b")
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(1000 + i))
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
	got, err := decodePlan(encodePlan(p))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, p) {
		t.Fatalf("decoded plan differs:\n got %+v\nwant %+v", got, p)
	}
	// Empty lists come back empty, not as lists of one empty item.
	small := &plan{Args: []string{"true"}, Shape: planShape()}
	got, err = decodePlan(encodePlan(small))
	if err != nil || len(got.Args) != 1 || got.Env != nil || got.Links != nil {
		t.Fatalf("small plan: %+v, %v", got, err)
	}
}

// A helper from another build, a plan cut short and one with bytes after
// its end are all refused: the helper never acts on half a plan.
func TestPlanRefused(t *testing.T) {
	p := fullPlan(t)
	b := encodePlan(p)
	other := *p
	other.Shape = "Args:[]string;"
	for name, in := range map[string][]byte{
		"empty":         nil,
		"no magic":      append([]byte("KSP0"), b[4:]...),
		"another build": encodePlan(&other),
		"cut short":     b[:len(b)-1],
		"cut in half":   b[:len(b)/2],
		"trailing":      append(append([]byte(nil), b...), 0),
		"flag of 2":     append(append([]byte(nil), b[:len(b)-1]...), 2),
		"a NUL byte":    encodePlan(&plan{Args: []string{"tr", "a\x00b"}, Shape: planShape()}),
	} {
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
	f.Add(encodePlan(fullPlan(f)))
	f.Add(encodePlan(&plan{Args: []string{"true"}, Shape: planShape()}))
	f.Add([]byte(planMagic + "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodePlan(b)
		if err != nil {
			return
		}
		// Whatever decodes encodes back to the same bytes.
		if again := encodePlan(p); string(again) != string(b) {
			t.Fatalf("decode then encode changed the plan: %x -> %x", b, again)
		}
	})
}
