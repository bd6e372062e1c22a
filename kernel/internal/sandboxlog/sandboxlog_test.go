package sandboxlog

import (
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestAppendRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	when := time.Date(2026, 12, 1, 8, 30, 0, 0, time.UTC)
	in := []Record{
		{Time: when, Run: "cat x", Kind: Opening, What: "--reveal /root/.ssh", Why: "hidden", Do: "leave it out", From: "sandbox"},
		{Time: when, Run: "make", Kind: Weaker, What: "no Landlock", Why: "accepted"},
	}
	for _, r := range in {
		if err := Append(dir, r); err != nil {
			t.Fatal(err)
		}
	}
	got, damaged, err := Read(dir, 0)
	if err != nil || len(damaged) > 0 {
		t.Fatal(err, damaged)
	}
	if d := cmp.Diff(in, got); d != "" {
		t.Fatalf("read back (-want +got):\n%s", d)
	}
	// What a later run added, from the size before it.
	off := Size(dir)
	Append(dir, Record{Kind: Device, What: "/dev/sda", Run: "ls"})
	got, _, _ = Read(dir, off)
	if len(got) != 1 || got[0].What != "/dev/sda" || got[0].Time.IsZero() {
		t.Fatalf("after offset: %+v", got)
	}
	if fi, _ := os.Stat(Path(dir)); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
	}
}

func TestAppendRefusesIncomplete(t *testing.T) {
	t.Parallel()
	if err := Append(t.TempDir(), Record{Kind: Opening}); !errors.Is(err, ErrRecord) {
		t.Fatalf("err = %v, want ErrRecord", err)
	}
}

func TestReadMissingIsEmpty(t *testing.T) {
	t.Parallel()
	recs, damaged, err := Read(t.TempDir(), 0)
	if err != nil || recs != nil || damaged != nil {
		t.Fatal(recs, damaged, err)
	}
}

// Concurrent runs of one task append whole lines, never interleaved.
func TestAppendConcurrent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			Append(dir, Record{Kind: NotRun, What: strings.Repeat("x", 3000), Run: string(rune('a' + i))})
		}()
	}
	wg.Wait()
	recs, damaged, err := Read(dir, 0)
	if err != nil || len(damaged) > 0 || len(recs) != 20 {
		t.Fatalf("%d records, damaged %v, err %v", len(recs), damaged, err)
	}
}

func TestParseDamaged(t *testing.T) {
	t.Parallel()
	good := `{"time":"2026-12-01T08:30:00Z","run":"ls","kind":"device","what":"/dev/sda","why":"never given"}`
	in := good + "\n" + "not json\n" + "\n" + `{"kind":"device"}` + "\n" + strings.Repeat("y", 70<<10) + "\n" + good + "\n" + `{"kind":"dev`
	recs, damaged, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("%d records, want the 2 good ones: %+v", len(recs), recs)
	}
	var lines []string
	for _, d := range damaged {
		if !errors.Is(d, ErrDamaged) {
			t.Errorf("%v is not ErrDamaged", d)
		}
		lines = append(lines, d.Error())
	}
	want := []string{
		"sandboxlog: damaged line 2: not a JSON record",
		"sandboxlog: damaged line 4: sandboxlog: incomplete record",
		"sandboxlog: damaged line 5: longer than a record",
		"sandboxlog: damaged line 7: cut short (no newline)",
	}
	if d := cmp.Diff(want, lines); d != "" {
		t.Fatalf("damaged (-want +got):\n%s", d)
	}
}

func TestLine(t *testing.T) {
	t.Parallel()
	l := Line(Record{Time: time.Now(), Run: "cat k", Kind: Opening, What: "--reveal /root/.ssh", Why: "it would open /root/.ssh", Do: "run it again without it"})
	for _, w := range []string{"sandbox: ", "refused --reveal /root/.ssh (cat k)", "it would open /root/.ssh", "run it again without it"} {
		if !strings.Contains(l, w) {
			t.Errorf("%q lacks %q", l, w)
		}
	}
}

// FuzzParse: any bytes give records and damaged lines, never a panic, and
// every record read back has its kind and what.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"time":"2026-12-01T08:30:00Z","run":"ls","kind":"device","what":"/dev/sda","why":"never given"}` + "\n"))
	f.Add([]byte("{}\n\n{\"kind\":\"weaker\",\"what\":\"no Landlock\"}"))
	f.Add([]byte("\xff\xfe\n{\"time\":\"nope\",\"kind\":\"x\",\"what\":\"y\"}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, damaged, err := Parse(strings.NewReader(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Kind == "" || r.What == "" {
				t.Fatalf("incomplete record read: %+v", r)
			}
			_ = Line(r)
		}
		for _, d := range damaged {
			if !errors.Is(d, ErrDamaged) {
				t.Fatalf("%v", d)
			}
		}
	})
}
