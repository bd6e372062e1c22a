//go:build linux && cgo

package sandbox

import (
	"reflect"
	"testing"
)

// The helper is C and the plan's writer Go: the two must agree on the
// plan's shape and on every plan, byte for byte.

func TestHelperReadsThisBuildsPlanShape(t *testing.T) {
	if got, want := helperShapeC(), planShape(); got != want {
		t.Fatalf("pid1_linux.c reads plans of the shape\n%s\nbut plan.go's is\n%s\n(update kule_plan_shape and kule_plan_decode with the plan)", got, want)
	}
}

func TestHelperTakesTheDescriptorsKuleGives(t *testing.T) {
	if got, want := helperWireC(), [5]int{fdPlan, fdStatus, fdDone, fdCtrl, planGo}; got != want {
		t.Fatalf("pid1_linux.h has fds and go byte %v, run_linux.go %v", got, want)
	}
}

func TestHelperDecodesThePlanAsGoDoes(t *testing.T) {
	p := fullPlan(t)
	got, err := decodePlanC(wire(p))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, p) {
		t.Fatalf("the C helper read the plan as\n %+v\nwant %+v", got, p)
	}
	small := &plan{Args: []string{"true"}, Shape: planShape()}
	if got, err := decodePlanC(wire(small)); err != nil || !reflect.DeepEqual(got, small) {
		t.Fatalf("small plan: %+v, %v", got, err)
	}
	for name, in := range refusedPlans(t) {
		if got, err := decodePlanC(in); err == nil {
			t.Errorf("%s: the C helper read %+v, want it refused", name, got)
		}
	}
}

// FuzzHelperDecodesAsGo holds the C decoder against the Go one: the same
// bytes are refused by both or read as the same plan by both.
func FuzzHelperDecodesAsGo(f *testing.F) {
	f.Add(wire(fullPlan(f)))
	f.Add(wire(&plan{Args: []string{"true"}, Shape: planShape()}))
	for _, b := range refusedPlans(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		gp, gerr := decodePlan(b)
		cp, cerr := decodePlanC(b)
		if (gerr == nil) != (cerr == nil) {
			t.Fatalf("Go says %v, C says %v, for %x", gerr, cerr, b)
		}
		if gerr == nil && !reflect.DeepEqual(gp, cp) {
			t.Fatalf("Go read %+v, C read %+v", gp, cp)
		}
	})
}
