package bigalloc

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// A large fresh slice is advised and stays usable; its huge pages show in
// the process's AnonHugePages once written (when the system allows them).
func TestAdviseLargeSlice(t *testing.T) {
	s := make([]uint64, 0, 8<<20/8) // 8 MiB
	Advise(s)
	s = s[:cap(s)]
	for i := range s {
		s[i] = uint64(i)
	}
	for i := range s {
		if s[i] != uint64(i) {
			t.Fatalf("element %d holds %d after the advice", i, s[i])
		}
	}
	mode, _ := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if !strings.Contains(string(mode), "[madvise]") && !strings.Contains(string(mode), "[always]") {
		t.Logf("transparent huge pages are off here (%s): only the advice's safety is checked", strings.TrimSpace(string(mode)))
		return
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	// The advice covers the whole huge pages inside the slice.
	addr := (uintptr(unsafe.Pointer(unsafe.SliceData(s))) + huge - 1) &^ (huge - 1)
	if kb := hugeAt(string(smaps), addr); kb == 0 {
		t.Errorf("the mapping holding the slice's first whole huge page has no huge pages (AnonHugePages 0)")
	}
}

// hugeAt is the AnonHugePages (kB) of the mapping holding addr.
func hugeAt(smaps string, addr uintptr) int {
	in := false
	for _, line := range strings.Split(smaps, "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && !strings.HasSuffix(f[0], ":") && strings.Contains(f[0], "-") {
			var lo, hi uintptr
			if _, err := fmt.Sscanf(f[0], "%x-%x", &lo, &hi); err == nil {
				in = addr >= lo && addr < hi
			}
			continue
		}
		if in && len(f) >= 2 && f[0] == "AnonHugePages:" {
			kb, _ := strconv.Atoi(f[1])
			return kb
		}
	}
	return 0
}

// Small slices are left alone.
func TestAdviseSmallSliceIsANoOp(t *testing.T) {
	s := make([]byte, 0, 100)
	Advise(s)
	Advise([]int(nil))
	s = append(s, 1)
	if s[0] != 1 {
		t.Fatal("a small slice changed")
	}
}

// ReadFile reads what os.ReadFile reads, small files and large, and a file
// that grew since it was looked at.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	for name, size := range map[string]int{"empty": 0, "small": 1000, "large": 5 << 20} {
		p := dir + "/" + name
		want := make([]byte, size)
		for i := range want {
			want[i] = byte(i * 7)
		}
		if err := os.WriteFile(p, want, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadFile(p)
		if err != nil || string(got) != string(want) {
			t.Errorf("%s: read %d bytes (%v), want %d", name, len(got), err, size)
		}
	}
	if _, err := ReadFile(dir + "/missing"); !os.IsNotExist(err) {
		t.Errorf("a missing file: %v", err)
	}
}
