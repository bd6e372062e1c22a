package history

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func newLog(t *testing.T, n int) (*Log, string, ed25519.PublicKey) {
	t.Helper()
	dir := t.TempDir()
	key, err := LoadKey(filepath.Join(dir, "keys"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "history.jsonl")
	l := Open(path, key)
	for i := 1; i <= n; i++ {
		kind := "commit"
		if i%2 == 0 {
			kind = "undo"
		}
		e, err := l.Append(kind, map[string]any{"n": i, "paths": []string{fmt.Sprintf("f%d.txt", i)}})
		if err != nil {
			t.Fatal(err)
		}
		if e.Seq != i {
			t.Fatalf("Append %d returned seq %d", i, e.Seq)
		}
	}
	return l, path, key.Public().(ed25519.PublicKey)
}

func lines(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.SplitAfter(b, []byte("\n"))[:bytes.Count(b, []byte("\n"))]
}

func writeLines(t *testing.T, path string, ls [][]byte) {
	t.Helper()
	if err := os.WriteFile(path, bytes.Join(ls, nil), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestAppendAndVerify(t *testing.T) {
	t.Parallel()
	l, path, pub := newLog(t, 5)
	if err := Verify(path, pub); err != nil {
		t.Fatalf("Verify of an untouched log: %v", err)
	}
	es, err := l.Entries()
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 5 {
		t.Fatalf("Entries: %d entries, want 5", len(es))
	}
	var d struct{ N int }
	if err := json.Unmarshal(es[2].Data, &d); err != nil || d.N != 3 {
		t.Fatalf("entry 3 data = %s (%v), want n=3", es[2].Data, err)
	}
	last, ok, err := l.Last()
	if err != nil || !ok || last.Seq != 5 || last.Kind != "commit" {
		t.Fatalf("Last = %+v, %v, %v; want entry 5, a commit", last, ok, err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("log mode: %v %v, want 0600", fi.Mode(), err)
	}
}

func TestEmptyLog(t *testing.T) {
	t.Parallel()
	l, path, pub := newLog(t, 0)
	if err := Verify(path, pub); err != nil {
		t.Fatalf("Verify of a missing log: %v", err)
	}
	if _, ok, err := l.Last(); ok || err != nil {
		t.Fatalf("Last of a missing log: ok=%v err=%v", ok, err)
	}
	if es, err := l.Entries(); len(es) != 0 || err != nil {
		t.Fatalf("Entries of a missing log: %v %v", es, err)
	}
}

// TestVerifyDetectsTampering tampers with a five-entry log in every way and
// expects Verify to fail naming the entry.
func TestVerifyDetectsTampering(t *testing.T) {
	t.Parallel()
	otherKey := func(t *testing.T) ed25519.PrivateKey {
		k, err := LoadKey(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	resign := func(t *testing.T, line []byte, key ed25519.PrivateKey, edit func(*Entry)) []byte {
		e, err := DecodeLine(bytes.TrimSuffix(line, []byte("\n")))
		if err != nil {
			t.Fatal(err)
		}
		edit(&e)
		if err := sign(key, &e); err != nil {
			t.Fatal(err)
		}
		b, err := encodeLine(e)
		if err != nil {
			t.Fatal(err)
		}
		return append(b, '\n')
	}
	tests := map[string]struct {
		tamper  func(t *testing.T, path string, ls [][]byte)
		wantSeq int
		want    string
	}{
		"changed data": {
			tamper: func(t *testing.T, path string, ls [][]byte) {
				ls[2] = bytes.Replace(ls[2], []byte(`"n":3`), []byte(`"n":9`), 1)
				writeLines(t, path, ls)
			},
			wantSeq: 3, want: "bad signature",
		},
		"changed kind": {
			tamper: func(t *testing.T, path string, ls [][]byte) {
				ls[1] = bytes.Replace(ls[1], []byte(`"kind":"undo"`), []byte(`"kind":"redo"`), 1)
				writeLines(t, path, ls)
			},
			wantSeq: 2, want: "bad signature",
		},
		"changed and re-signed with another key": {
			tamper: func(t *testing.T, path string, ls [][]byte) {
				ls[3] = resign(t, ls[3], otherKey(t), func(e *Entry) { e.Kind = "approval" })
				writeLines(t, path, ls)
			},
			wantSeq: 4, want: "bad signature",
		},
		"removed in the middle": {
			tamper: func(t *testing.T, path string, ls [][]byte) {
				writeLines(t, path, append(ls[:2:2], ls[3:]...))
			},
			wantSeq: 3, want: "holds entry 4",
		},
		"removed first": {
			tamper: func(t *testing.T, path string, ls [][]byte) {
				writeLines(t, path, ls[1:])
			},
			wantSeq: 1, want: "holds entry 2",
		},
		"removed last": {
			tamper: func(t *testing.T, path string, ls [][]byte) {
				writeLines(t, path, ls[:4])
			},
			wantSeq: 5, want: "last entries were removed",
		},
		"removed last two": {
			tamper: func(t *testing.T, path string, ls [][]byte) {
				writeLines(t, path, ls[:3])
			},
			wantSeq: 4, want: "last entries were removed",
		},
		"removed all": {
			tamper: func(t *testing.T, path string, ls [][]byte) {
				writeLines(t, path, nil)
			},
			wantSeq: 1, want: "last entries were removed",
		},
		"log file deleted": {
			tamper: func(t *testing.T, path string, ls [][]byte) {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
			},
			wantSeq: 1, want: "last entries were removed",
		},
		"head file deleted": {
			tamper: func(t *testing.T, path string, ls [][]byte) {
				if err := os.Remove(HeadPath(path)); err != nil {
					t.Fatal(err)
				}
			},
			wantSeq: 5, want: "head file is missing",
		},
		"head file forged": {
			tamper: func(t *testing.T, path string, ls [][]byte) {
				l := Open(filepath.Join(t.TempDir(), "h.jsonl"), otherKey(t))
				if err := l.writeHead(4, lineHash(bytes.TrimSuffix(ls[3], []byte("\n")))); err != nil {
					t.Fatal(err)
				}
				b, _ := os.ReadFile(HeadPath(l.path))
				os.WriteFile(HeadPath(path), b, 0o600)
				writeLines(t, path, ls[:4])
			},
			wantSeq: 4, want: "bad signature",
		},
		"reordered": {
			tamper: func(t *testing.T, path string, ls [][]byte) {
				ls[1], ls[2] = ls[2], ls[1]
				writeLines(t, path, ls)
			},
			wantSeq: 2, want: "holds entry 3",
		},
		"reordered and renumbered": {
			tamper: func(t *testing.T, path string, ls [][]byte) {
				k := otherKey(t)
				a := resign(t, ls[2], k, func(e *Entry) { e.Seq = 2 })
				b := resign(t, ls[1], k, func(e *Entry) { e.Seq = 3 })
				ls[1], ls[2] = a, b
				writeLines(t, path, ls)
			},
			wantSeq: 2, want: "prev hash does not match entry 1",
		},
		"inserted duplicate": {
			tamper: func(t *testing.T, path string, ls [][]byte) {
				ls = append(ls[:3], append([][]byte{ls[2]}, ls[3:]...)...)
				writeLines(t, path, ls)
			},
			wantSeq: 4, want: "holds entry 3",
		},
		"inserted forged entry": {
			tamper: func(t *testing.T, path string, ls [][]byte) {
				forged := resign(t, ls[2], otherKey(t), func(e *Entry) { e.Kind = "approval" })
				ls = append(ls[:3], append([][]byte{forged}, ls[3:]...)...)
				writeLines(t, path, ls)
			},
			wantSeq: 4, want: "holds entry 3",
		},
		"appended forged entries": {
			tamper: func(t *testing.T, path string, ls [][]byte) {
				k := otherKey(t)
				six := resign(t, ls[4], k, func(e *Entry) { e.Seq = 6; e.Prev = lineHash(bytes.TrimSuffix(ls[4], []byte("\n"))) })
				writeLines(t, path, append(ls, six))
			},
			wantSeq: 6, want: "bad signature",
		},
		"whitespace added": {
			tamper: func(t *testing.T, path string, ls [][]byte) {
				ls[0] = bytes.Replace(ls[0], []byte(`,"kind"`), []byte(`, "kind"`), 1)
				writeLines(t, path, ls)
			},
			wantSeq: 1, want: "not in canonical form",
		},
		"garbage line": {
			tamper: func(t *testing.T, path string, ls [][]byte) {
				ls[4] = []byte("{not json\n")
				writeLines(t, path, ls)
			},
			wantSeq: 5, want: "not a valid entry",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, path, pub := newLog(t, 5)
			tc.tamper(t, path, lines(t, path))
			err := Verify(path, pub)
			var ve *VerifyError
			if !errors.As(err, &ve) || !errors.Is(err, ErrTampered) {
				t.Fatalf("Verify = %v, want a *VerifyError wrapping ErrTampered", err)
			}
			if ve.Seq != tc.wantSeq || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Verify = %q (entry %d), want entry %d and %q", err, ve.Seq, tc.wantSeq, tc.want)
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("entry %d:", tc.wantSeq)) {
				t.Fatalf("Verify = %q does not name entry %d", err, tc.wantSeq)
			}
		})
	}
}

func TestVerifyWrongKey(t *testing.T) {
	t.Parallel()
	_, path, _ := newLog(t, 3)
	other, err := LoadKey(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	err = Verify(path, other.Public().(ed25519.PublicKey))
	if !errors.Is(err, ErrTampered) || !strings.Contains(err.Error(), "entry 1: bad signature") {
		t.Fatalf("Verify with another key = %v, want entry 1: bad signature", err)
	}
}

// TestTornTail: a crash mid-append leaves a line without its newline. It was
// never acknowledged, so readers ignore it and the next Append cuts it off.
func TestTornTail(t *testing.T) {
	t.Parallel()
	tests := map[string]func(ls [][]byte) []byte{
		"half an entry":       func(ls [][]byte) []byte { return ls[2][:len(ls[2])/2] },
		"entry minus newline": func(ls [][]byte) []byte { return bytes.TrimSuffix(ls[2], []byte("\n")) },
		"one byte":            func(ls [][]byte) []byte { return []byte("{") },
	}
	for name, torn := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l, path, pub := newLog(t, 3)
			ls := lines(t, path)
			// The log and head as a crash during the third append leaves them.
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write(bytes.Join(ls[:2], nil))
			f.Write(torn(ls))
			f.Close()
			if err := l.writeHead(2, lineHash(bytes.TrimSuffix(ls[1], []byte("\n")))); err != nil {
				t.Fatal(err)
			}

			if err := Verify(path, pub); err != nil {
				t.Fatalf("Verify with a torn tail: %v", err)
			}
			if last, ok, err := l.Last(); err != nil || !ok || last.Seq != 2 {
				t.Fatalf("Last with a torn tail = %d %v %v, want entry 2", last.Seq, ok, err)
			}
			e, err := l.Append("commit", "after the crash")
			if err != nil {
				t.Fatalf("Append after a torn tail: %v", err)
			}
			if e.Seq != 3 {
				t.Fatalf("Append after a torn tail: seq %d, want 3", e.Seq)
			}
			if err := Verify(path, pub); err != nil {
				t.Fatalf("Verify after repair: %v", err)
			}
			b, _ := os.ReadFile(path)
			if bytes.Count(b, []byte("\n")) != 3 || b[len(b)-1] != '\n' {
				t.Fatalf("log after repair:\n%s", b)
			}
			if got := lines(t, path)[2]; !bytes.Contains(got, []byte(`"after the crash"`)) {
				t.Fatalf("entry 3 after repair = %s", got)
			}
		})
	}
}

// TestHeadBehindByOne: a crash between writing the line and the head leaves
// the head one entry behind; the entry is signed, so Verify accepts it and
// the next Append brings the head up to date.
func TestHeadBehindByOne(t *testing.T) {
	t.Parallel()
	l, path, pub := newLog(t, 3)
	ls := lines(t, path)
	if err := l.writeHead(2, lineHash(bytes.TrimSuffix(ls[1], []byte("\n")))); err != nil {
		t.Fatal(err)
	}
	if err := Verify(path, pub); err != nil {
		t.Fatalf("Verify with the head one behind: %v", err)
	}
	if _, err := l.Append("commit", 4); err != nil {
		t.Fatalf("Append with the head one behind: %v", err)
	}
	h, err := readHead(path, pub)
	if err != nil || h.Seq != 4 {
		t.Fatalf("head after Append = %+v, %v; want seq 4", h, err)
	}
	if err := Verify(path, pub); err != nil {
		t.Fatal(err)
	}
}

func TestAppendRefusesTamperedLog(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		tamper func(t *testing.T, path string, ls [][]byte)
		want   error
	}{
		"last removed": {func(t *testing.T, path string, ls [][]byte) { writeLines(t, path, ls[:2]) }, ErrTampered},
		"head removed": {func(t *testing.T, path string, ls [][]byte) { os.Remove(HeadPath(path)) }, ErrHeadMissing},
		"last changed": {func(t *testing.T, path string, ls [][]byte) {
			ls[3] = bytes.Replace(ls[3], []byte(`"n":4`), []byte(`"n":7`), 1)
			writeLines(t, path, ls)
		}, ErrTampered},
		"last garbage": {func(t *testing.T, path string, ls [][]byte) {
			ls[3] = []byte("xx\n")
			writeLines(t, path, ls)
		}, ErrBadLine},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l, path, _ := newLog(t, 4)
			tc.tamper(t, path, lines(t, path))
			before, _ := os.ReadFile(path)
			_, err := l.Append("commit", 5)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Append on a tampered log = %v, want %v", err, tc.want)
			}
			after, _ := os.ReadFile(path)
			if !bytes.Equal(before, after) {
				t.Fatalf("Append on a tampered log changed it")
			}
		})
	}
}

func TestConcurrentAppend(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key, err := LoadKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "history.jsonl")
	// Two Logs on one file stand for two processes: the flock serialises them.
	logs := []*Log{Open(path, key), Open(path, key)}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if _, err := logs[i%2].Append("commit", i); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := Verify(path, key.Public().(ed25519.PublicKey)); err != nil {
		t.Fatal(err)
	}
	es, err := logs[0].Entries()
	if err != nil || len(es) != 20 {
		t.Fatalf("Entries: %d, %v; want 20", len(es), err)
	}
}

func TestLoadKey(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "keys")
	k1, err := LoadKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := LoadKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !k1.Equal(k2) {
		t.Fatal("LoadKey returned a different key the second time")
	}
	fi, err := os.Stat(filepath.Join(dir, KeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v (%v), want 0600", fi.Mode(), err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("keys dir holds %d names, want only the key (no temp files left)", len(ents))
	}
}

func TestLoadKeyConcurrentCreate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keys := make([]ed25519.PrivateKey, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			k, err := LoadKey(dir)
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		})
	}
	wg.Wait()
	for _, k := range keys[1:] {
		if !k.Equal(keys[0]) {
			t.Fatal("racing LoadKey calls returned different keys")
		}
	}
}

func TestLoadKeyDamaged(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		content string
		mode    os.FileMode
		want    error
	}{
		"empty":          {"", 0o600, ErrKeyDamaged},
		"wrong header":   {"ssh-ed25519 AAAA\nAAAA\n", 0o600, ErrKeyDamaged},
		"bad base64":     {keyHeader + "\n!!!!\n", 0o600, ErrKeyDamaged},
		"short seed":     {keyHeader + "\nAAAA\n", 0o600, ErrKeyDamaged},
		"world readable": {keyHeader + "\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n", 0o644, ErrKeyExposed},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, KeyFile)
			if err := os.WriteFile(path, []byte(tc.content), tc.mode); err != nil {
				t.Fatal(err)
			}
			os.Chmod(path, tc.mode)
			_, err := LoadKey(dir)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("LoadKey = %v, want %v naming %s", err, tc.want, path)
			}
			b, _ := os.ReadFile(path)
			if string(b) != tc.content {
				t.Fatal("LoadKey changed a damaged key file")
			}
		})
	}
	t.Run("directory", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		os.Mkdir(filepath.Join(dir, KeyFile), 0o700)
		if _, err := LoadKey(dir); !errors.Is(err, ErrKeyDamaged) {
			t.Fatalf("LoadKey with a directory in place of the key = %v", err)
		}
	})
	t.Run("good seed", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, KeyFile), []byte(keyHeader+"\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"), 0o600)
		if _, err := LoadKey(dir); err != nil {
			t.Fatalf("LoadKey with a good file: %v", err)
		}
	})
}
