package daemon

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestAppAgentChatPanel: Mod+Shift+J shows the chat; Enter sends the prompt and the agent's
// words come back; Shift+Enter adds a line; Ctrl+Enter sends too.
func TestAppAgentChatPanel(t *testing.T) {
	ctx, shot := browser(t)
	cfg := Config{Kernel: newKernel(t)}
	withPeerScript(t, &cfg, "spend", "")
	d := startDaemon(t, cfg)
	rep, err := d.k.NewTask(context.Background(), sampleFolder(t))
	must(t, err)
	step(t, ctx, shot, "open the chat",
		chromedp.Navigate(d.URL()),
		clickOf(`#task-list li[data-id="`+rep.Task.ID+`"]`),
		chromedp.WaitVisible(chromedp.CSS(`#taskview`)),
		chromedp.KeyEvent("j", chromedp.KeyModifiers(chromedp.ModifierCtrl, chromedp.ModifierShift)),
		chromedp.WaitVisible(chromedp.CSS(`#chat-input`)),
		void(chromedp.Poll[bool](`document.getElementById('chat-agent').value === 'peer'`)))
	step(t, ctx, shot, "Enter sends",
		chromedp.Click(chromedp.CSS(`#chat-input`)),
		chromedp.SendKeys(chromedp.CSS(`#chat-input`), "say done"),
		chromedp.KeyEvent("\r"),
		void(chromedp.Poll[bool](`document.querySelector('.chat-list').innerText.includes('Done.')`)),
		void(chromedp.Poll[bool](`!!document.querySelector('.chat-list li.chat-end')`)))
	said := value(t, ctx, shot, "read the chat", textOf(`.chat-list`))
	if !strings.Contains(said, "You → peer") || !strings.Contains(said, "say done") {
		t.Fatalf("the chat reads %q", said)
	}
	step(t, ctx, shot, "Shift+Enter adds a line, Ctrl+Enter sends",
		chromedp.SendKeys(chromedp.CSS(`#chat-input`), "line one"),
		chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierShift)),
		chromedp.SendKeys(chromedp.CSS(`#chat-input`), "line two"))
	if v := value(t, ctx, shot, "the prompt", chromedp.Value(chromedp.CSS(`#chat-input`))); v != "line one\nline two" {
		t.Fatalf("after Shift+Enter the prompt is %q", v)
	}
	step(t, ctx, shot, "Ctrl+Enter sends",
		chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		void(chromedp.Poll[bool](`document.querySelector('.chat-list').innerText.includes('line two') && document.getElementById('chat-input').value === ''`)))
}
