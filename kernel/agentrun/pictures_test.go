package agentrun_test

import (
	"context"
	"strings"
	"testing"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/kernel/agentrun"
	"github.com/kulehq/kule/kernel/internal/runner"
)

// TestRunSendsPicturesOnlyToAnAgentThatTakesThem: a run's Pictures reach
// the agent as image blocks when its initialize declares
// promptCapabilities.image, named at the text's end; an agent that does not
// gets the text alone.
func TestRunSendsPicturesOnlyToAnAgentThatTakesThem(t *testing.T) {
	// A 1×1 PNG; the ACP client hands on the bytes, it never decodes them.
	const onePixel = "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x00\x00\x00\x00:~\x9bU\x00\x00\x00\nIDATx\x9cc`\x00\x00\x00\x02\x00\x01H\xaf\xa4q\x00\x00\x00\x00IEND\xaeB`\x82"
	for script, want := range map[string]string{
		"pictures":   "images=2 last=Sent as pictures after this text, in this order: place 1, a.png region 0,0–1,1 (pixels); place 2, b.png region 0,0–1,1 (pixels).",
		"nopictures": "images=0 last=look",
	} {
		t.Run(script, func(t *testing.T) {
			f := newFixture(t, script)
			f.approve(t)
			o := f.options("look")
			o.Runner = runner.Direct{}
			o.Pictures = []kernel.Picture{
				{Name: "place 1, a.png region 0,0–1,1 (pixels)", PNG: []byte(onePixel)},
				{Name: "place 2, b.png region 0,0–1,1 (pixels)", PNG: []byte(onePixel)},
			}
			r, err := agentrun.Start(context.Background(), f.k, f.t, o)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Wait(); err != nil {
				t.Fatal(err)
			}
			if got := f.text(); !strings.Contains(got, want) {
				t.Errorf("the agent said %q, want %q", got, want)
			}
		})
	}
}
