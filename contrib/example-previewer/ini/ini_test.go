package ini

import (
	"testing"

	"github.com/kulehq/kule/sdk/previewer/previewertest"
)

func TestConformance(t *testing.T) {
	previewertest.Run(t, New(), previewertest.Sample{Path: "conf/app.ini", Src: []byte("; comment\n[server]\nport = 80\nhost = a\n\n[db]\nurl = x\n")})
}

func FuzzINI(f *testing.F) {
	f.Add([]byte("[a]\nb = c\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		if err := previewertest.Check(New(), "a.ini", src); err != nil {
			t.Fatal(err)
		}
	})
}
