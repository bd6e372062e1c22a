//go:build linux && cgo

package sandbox

/*
#cgo CFLAGS: -Wall -Wextra -Werror -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fstack-clash-protection -fPIE
#include <stdlib.h>
#include "pid1_linux.h"
*/
import "C"

import (
	"errors"
	"unsafe"
)

// The sandbox's helper is C (pid1_linux.c), run from a constructor before
// the Go runtime starts; this file only lets the tests reach its plan
// decoder and its idea of the plan's shape.

// HelperMain answers a binary started with a helper's arguments (cmd/kule
// and cmd/kule-sandbox call it, through ServeHelper). The C helper runs
// before any main when kule starts it with its exact arguments, so a main
// that gets here was started by a person.
func HelperMain() int { return usage() }

// helperWireC is what the C helper takes its descriptors and its go byte to
// be: fdPlan, fdStatus, fdDone, fdCtrl, planGo.
func helperWireC() [5]int {
	return [5]int{C.FD_PLAN, C.FD_STATUS, C.FD_DONE, C.FD_CTRL, C.KULE_PLAN_GO}
}

// helperShapeC is the plan shape the C helper reads.
func helperShapeC() string { return C.GoString((*C.char)(unsafe.Pointer(&C.kule_plan_shape))) }

// decodePlanC decodes b with the C helper's decoder.
func decodePlanC(b []byte) (*plan, error) {
	buf := C.CBytes(b)
	defer C.free(buf)
	var cp C.struct_kule_plan
	if msg := C.kule_plan_decode((*C.uchar)(buf), C.size_t(len(b)), &cp); msg != nil {
		return nil, errors.New(C.GoString(msg))
	}
	defer C.kule_plan_free(&cp)
	strs := func(l C.struct_kule_strs) []string {
		if l.n == 0 {
			return nil
		}
		v := unsafe.Slice(l.v, l.n)
		out := make([]string, len(v))
		for i, s := range v {
			out[i] = C.GoString(s)
		}
		return out
	}
	p := &plan{
		Shape: C.GoString(cp.shape), Args: strs(cp.args), Dir: C.GoString(cp.dir), Env: strs(cp.env),
		Copy: C.GoString(cp.copy), Tmp: C.GoString(cp.tmp), Home: C.GoString(cp.home), Cache: C.GoString(cp.cache),
		Upper: C.GoString(cp.upper), Work: C.GoString(cp.work),
		FSize: int64(cp.fsize), Writable: strs(cp.writable), ReadOnly: strs(cp.readonly), Keep: strs(cp.keep),
		HideDirs: strs(cp.hide_dirs), HideFiles: strs(cp.hide_files),
		Devices: strs(cp.devices), NetNS: cp.netns != 0, ProxyPort: int(cp.proxy_port),
		Seccomp: int(cp.seccomp), PTY: cp.pty != 0,
		Landlock: landlockRuleset{HandledFS: int64(cp.landlock.handled_fs), HandledNet: int64(cp.landlock.handled_net), Scoped: int64(cp.landlock.scoped)},
	}
	if cp.landlock.nrules > 0 {
		for _, r := range unsafe.Slice(cp.landlock.rules, cp.landlock.nrules) {
			p.Landlock.Rules = append(p.Landlock.Rules, landlockRule{Path: C.GoString(r.path), Access: int64(r.access), Port: int(r.port), Optional: r.optional != 0})
		}
	}
	if cp.nlinks > 0 {
		for _, l := range unsafe.Slice(cp.links, cp.nlinks) {
			p.Links = append(p.Links, link{Path: C.GoString(l.path), Target: C.GoString(l.target)})
		}
	}
	return p, nil
}
