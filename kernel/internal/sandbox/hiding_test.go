package sandbox

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseUserDirs(t *testing.T) {
	src := `# This file is written by xdg-user-dirs-update
XDG_DESKTOP_DIR="$HOME/"
XDG_DOWNLOAD_DIR="$HOME/Téléchargements"
  XDG_DOCUMENTS_DIR="$HOME/Dokumente"
XDG_MUSIC_DIR="/data/musik"
XDG_PICTURES_DIR=$HOME/Bilder
XDG_VIDEOS_DIR="relative/path"
XDG_TEMPLATES_DIR="$HOME/../../etc"
XDG_PUBLICSHARE_DIR="$HOME"
NOT_XDG="$HOME/x"
XDG__DIR="$HOME/y"
XDG_ROOT_DIR="/"
`
	got := parseUserDirs([]byte(src), "/home/p")
	want := []string{"/home/p/Téléchargements", "/home/p/Dokumente"}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
}

func FuzzParseUserDirs(f *testing.F) {
	f.Add([]byte("XDG_DOCUMENTS_DIR=\"$HOME/Dokumente\"\n"))
	f.Add([]byte("XDG_DESKTOP_DIR=\"$HOME/\"\n# c\n\nXDG_X_DIR=\"/abs\"\n"))
	f.Add([]byte("XDG_A_DIR=\"$HOME/../..\"\nXDG_B_DIR=\"\\\\\"\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, p := range parseUserDirs(b, "/home/p") {
			if !filepath.IsAbs(p) || filepath.Clean(p) != p {
				t.Fatalf("%q is not a clean absolute path", p)
			}
			if !strings.HasPrefix(p, "/home/p/") || strings.ContainsRune(p, 0) {
				t.Fatalf("%q is not inside the home, or holds a NUL", p)
			}
		}
	})
}

func TestBesideWorkspace(t *testing.T) {
	for _, tc := range []struct {
		folder     string
		parentOnly bool
		want       string
	}{
		{"/home/p/projects/clientA/app", false, "/home/p/projects"},
		{"/home/p/projects/clientA/app", true, "/home/p/projects/clientA"},
		{"/home/p/code/proj", false, "/home/p/code"},
		{"/home/p/proj", false, ""},
		{"/home/p", false, ""},
		{"/srv/proj", false, ""},
		{"/home/p/.local/src/a/b", false, "/home/p/.local/src"},
		{"/home/p/.config/nvim", false, ""},
		{"/home/pp/x/y", false, ""},
	} {
		if got := besideWorkspace(tc.folder, "/home/p", tc.parentOnly); got != tc.want {
			t.Errorf("besideWorkspace(%s, %v) = %q, want %q", tc.folder, tc.parentOnly, got, tc.want)
		}
	}
}

func TestBoundSockets(t *testing.T) {
	src := "Num       RefCount Protocol Flags    Type St Inode Path\n" +
		"0000000000000000: 00000002 00000000 00010000 0001 01 20001 /run/postgresql/.s.PGSQL.5432\n" +
		"0000000000000000: 00000002 00000000 00010000 0001 01 20002 @/tmp/.X11-unix/X0\n" +
		"0000000000000000: 00000003 00000000 00000000 0001 03 20003\n" +
		"0000000000000000: 00000002 00000000 00010000 0001 01 20004 /home/p/my socket\n" +
		"0000000000000000: 00000002 00000000 00010000 0001 01 20005 relative.sock\n" +
		"0000000000000000: 00000002 00000000 00010000 0001 01 20006 /a/../b\n"
	want := []string{"/run/postgresql/.s.PGSQL.5432", "/home/p/my socket"}
	if d := cmp.Diff(want, boundSockets([]byte(src))); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
}

func FuzzBoundSockets(f *testing.F) {
	f.Add([]byte("Num RefCount Protocol Flags Type St Inode Path\n0: 2 0 10000 1 1 2 /run/x.sock\n"))
	f.Add([]byte("h\n0: 2 0 10000 1 1 2 @abstract\n0: 3 0 0 1 3 4\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, p := range boundSockets(b) {
			if !filepath.IsAbs(p) || filepath.Clean(p) != p || strings.ContainsAny(p, "\n\x00") {
				t.Fatalf("%q is not a clean absolute path", p)
			}
		}
	})
}
