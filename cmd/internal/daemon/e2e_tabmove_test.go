package daemon

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestAppTabMoveByKeyboard moves a panel's tab to another region with keys alone, as a
// window gets them: Shift+F10 on the focused tab opens its menu of regions, the arrows pick
// one and Enter moves it there, where the tab keeps the focus; the menu key does the same;
// Escape closes the menu and changes nothing. Each move reaches layout.json.
func TestAppTabMoveByKeyboard(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	ctx, shot := browser(t)
	d := startDaemon(t, Config{})
	rep, err := d.k.NewTask(context.Background(), sampleFolder(t))
	must(t, err)
	kept := func() Layout {
		var l Layout
		_ = json.Unmarshal([]byte(readFile(d.layoutPath())), &l)
		return l
	}
	in := func(r string) func() bool {
		return func() bool {
			g := kept().Regions[r]
			return g != nil && slices.Contains(g.Panels, "timeline") && g.Active == "timeline"
		}
	}
	focused := `document.activeElement && document.activeElement.id === 'tab-timeline'`

	step(t, ctx, shot, "focus the Timeline's tab",
		chromedp.Navigate(d.URL()),
		clickOf(`#task-list li[data-id="`+rep.Task.ID+`"]`),
		chromedp.WaitVisible(chromedp.CSS(`#taskview`)),
		void(chromedp.Evaluate[bool](`(document.getElementById('tab-timeline').focus(), true)`)),
		void(chromedp.Poll[bool](focused)))
	step(t, ctx, shot, "Shift+F10 opens its menu, on its first region",
		chromedp.KeyEvent(kb.F10, chromedp.KeyModifiers(chromedp.ModifierShift)),
		void(chromedp.Poll[bool](`document.activeElement && document.activeElement.dataset.moveTo === 'left'`)))
	items := value(t, ctx, shot, "the menu's items", chromedp.Evaluate[[]string](`[...document.querySelectorAll('.tab-move [role=menuitem]')].map((b) => b.innerText)`))
	if want := []string{"Move to the left side", "Move to the right side", "Move to the bottom panel"}; !slices.Equal(items, want) {
		t.Fatalf("the tab's menu: %q, want %q", items, want)
	}
	step(t, ctx, shot, "ArrowDown and Enter: the right side",
		chromedp.KeyEvent(kb.ArrowDown),
		void(chromedp.Poll[bool](`document.activeElement.dataset.moveTo === 'right'`)),
		chromedp.KeyEvent(kb.Enter),
		void(chromedp.Poll[bool](`!!document.querySelector('#r-right .rtabs #tab-timeline') && !document.querySelector('#r-main #tab-timeline') && !document.getElementById('r-right').hidden && !!document.querySelector('#r-right .rbody > #v-timeline:not([hidden])') && !document.querySelector('.tab-move') && `+focused)))
	waitFor(t, "layout.json keeps the Timeline on the right", in("right"))

	step(t, ctx, shot, "the menu key, End and Enter: the bottom panel",
		chromedp.KeyEvent(kb.ContextMenu),
		void(chromedp.Poll[bool](`!!document.querySelector('.tab-move') && document.activeElement.dataset.moveTo === 'left'`)),
		chromedp.KeyEvent(kb.End),
		void(chromedp.Poll[bool](`document.activeElement.dataset.moveTo === 'bottom'`)),
		chromedp.KeyEvent(kb.Enter),
		void(chromedp.Poll[bool](`!!document.querySelector('#r-bottom .rtabs #tab-timeline') && !document.getElementById('r-bottom').hidden && `+focused)))
	waitFor(t, "layout.json keeps the Timeline in the bottom panel", in("bottom"))

	step(t, ctx, shot, "the menu of a tab in the bottom panel",
		chromedp.KeyEvent(kb.F10, chromedp.KeyModifiers(chromedp.ModifierShift)),
		void(chromedp.Poll[bool](`!!document.querySelector('.tab-move') && document.activeElement.dataset.moveTo === 'left'`)))
	checkNames(t, ctx, shot, "a tab's menu")
	shotAt1000(t, ctx, shot, "tab-move-menu")
	step(t, ctx, shot, "Escape closes the menu and moves nothing",
		void(chromedp.Poll[bool](`!!document.querySelector('.tab-move')`)),
		chromedp.KeyEvent(kb.ArrowDown),
		chromedp.KeyEvent(kb.Escape),
		void(chromedp.Poll[bool](`!document.querySelector('.tab-move') && !!document.querySelector('#r-bottom .rtabs #tab-timeline') && `+focused)))
	if !in("bottom")() {
		t.Fatalf("Escape moved the tab: %+v", kept())
	}
}
