package acp

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"strings"
	"testing"
)

func pngSized(t *testing.T, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func fourImages(t *testing.T) []Image {
	var out []Image
	for i := 1; i <= 4; i++ {
		out = append(out, Image{Name: fmt.Sprintf("place %d, p%d.png region 0,0–%d,%d (pixels)", i, i, 10*i, 5*i), PNG: pngSized(t, 10*i, 5*i)})
	}
	return out
}

// promptSeen is the peer's account of the prompt it got, one line a block.
func promptSeen(t *testing.T, script string, images []Image) (AgentInfo, []string) {
	t.Helper()
	h := startPeer(t, script, nil)
	h.open(t)
	if _, err := h.c.PromptWith(context.Background(), "look at these", images); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the peer's account of the prompt", func() bool { return strings.Contains(h.text(), "text:") })
	return h.c.Info(), strings.Split(h.text(), "\n")
}

// TestPromptImagesToAnAgentThatTakesThem: an agent whose initialize says
// promptCapabilities.image gets the first three pictures as PNG image
// blocks after the text, decoding to their sizes; the fourth is left out,
// and the text names the three sent.
func TestPromptImagesToAnAgentThatTakesThem(t *testing.T) {
	t.Parallel()
	info, seen := promptSeen(t, "images", fourImages(t))
	if !info.Image {
		t.Fatal("promptCapabilities.image was not read from initialize")
	}
	var images []string
	text := ""
	for _, s := range seen {
		if v, ok := strings.CutPrefix(s, "image:"); ok {
			images = append(images, v)
		} else if !strings.HasPrefix(s, "text:") && text != "" {
			text += "\n" + s
		} else if v, ok := strings.CutPrefix(s, "text:"); ok {
			text = v
		}
	}
	if got := strings.Join(images, " "); got != "10x5 20x10 30x15" {
		t.Errorf("images %q, want the first three at 10x5 20x10 30x15", got)
	}
	if !strings.HasPrefix(seen[0], "text:look at these") {
		t.Errorf("the text does not come first: %q", seen)
	}
	for i := 1; i <= 3; i++ {
		if !strings.Contains(text, fmt.Sprintf("place %d, p%d.png", i, i)) {
			t.Errorf("the text does not name picture %d as sent: %q", i, text)
		}
	}
	if strings.Contains(text, "place 4") {
		t.Errorf("the text names the fourth picture, which was not sent: %q", text)
	}
}

// TestPromptNoImagesToAnAgentThatDoesNot: the same prompt to an agent that
// does not declare promptCapabilities.image is its text alone, unchanged.
func TestPromptNoImagesToAnAgentThatDoesNot(t *testing.T) {
	t.Parallel()
	info, seen := promptSeen(t, "noimages", fourImages(t))
	if info.Image {
		t.Fatal("an agent without promptCapabilities.image counted as taking images")
	}
	if len(seen) != 1 || seen[0] != "text:look at these" {
		t.Errorf("the prompt held %q, want the text alone", seen)
	}
}

// TestPromptBlocksGuard shows the capability check is what keeps images
// from an agent that did not ask for them: without it the blocks go out.
func TestPromptBlocksGuard(t *testing.T) {
	ims := fourImages(t)
	if got := promptBlocks("x", ims, false); len(got) != 1 {
		t.Errorf("%d blocks to an agent that takes no images", len(got))
	}
	if got := promptBlocks("x", ims, true); len(got) != 1+MaxImages || got[1].Type != "image" || got[1].MimeType != "image/png" {
		t.Errorf("the unguarded path sent %+v", got)
	}
	if got := promptBlocks("x", nil, true); len(got) != 1 || got[0].Text != "x" {
		t.Errorf("no images changed the prompt: %+v", got)
	}
}
