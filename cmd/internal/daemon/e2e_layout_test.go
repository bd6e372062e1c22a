package daemon

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestAppLayout drives the window's regions in Chromium: the keys hide and show the left
// side, the bottom panel and the right side; a tab dragged with the mouse from the main area
// to the right side moves there with its view, and the layout reaches layout.json and is
// there again after a reload; the main area and the bottom panel are never hidden together;
// a region is resized by its edge; Reset the layout puts every panel back.
func TestAppLayout(t *testing.T) {
	t.Setenv("SHELL", "/bin/bash")
	t.Setenv("HOME", t.TempDir())
	ctx, shot := browser(t)
	d := startDaemon(t, Config{})
	rep, err := d.k.NewTask(context.Background(), sampleFolder(t))
	must(t, err)
	id := rep.Task.ID
	hidden := func(r string) string { return `document.getElementById('r-` + r + `').hidden` }
	shown := func(r string) string { return `!document.getElementById('r-` + r + `').hidden` }
	kept := func() Layout {
		var l Layout
		_ = json.Unmarshal([]byte(readFile(d.layoutPath())), &l)
		return l
	}

	step(t, ctx, shot, "the default layout",
		chromedp.Navigate(d.URL()),
		clickOf(`#task-list li[data-id="`+id+`"]`),
		chromedp.WaitVisible(chromedp.CSS(`#taskview`)),
		void(chromedp.Poll[bool](shown("left")+` && `+hidden("right")+` && `+hidden("bottom")+` && !!document.querySelector('#r-left .rtabs #tab-tasks') && !!document.querySelector('#r-main .rtabs #tab-live')`)))
	step(t, ctx, shot, "Ctrl+B hides the left side and shows it again",
		chromedp.KeyEvent("b", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		void(chromedp.Poll[bool](hidden("left"))),
		chromedp.KeyEvent("b", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		void(chromedp.Poll[bool](shown("left"))))
	step(t, ctx, shot, "Ctrl+J shows the bottom panel with the Terminal, Ctrl+Alt+B the right side with the agent chat",
		chromedp.KeyEvent("j", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		void(chromedp.Poll[bool](shown("bottom")+` && document.querySelector('#r-bottom #tab-terminal')?.getAttribute('aria-selected') === 'true' && !!document.querySelector('#r-bottom .rbody > #v-terminal:not([hidden])')`)),
		chromedp.KeyEvent("b", chromedp.KeyModifiers(chromedp.ModifierCtrl, chromedp.ModifierAlt)),
		void(chromedp.Poll[bool](shown("right")+` && !!document.querySelector('#r-right .rbody > #v-chat:not([hidden])')`)))

	dragTo(t, ctx, shot, "drag the Timeline tab to the right side", `#r-main #tab-timeline`, `#r-right .rbody`)
	step(t, ctx, shot, "the Timeline is on the right side, shown",
		void(chromedp.Poll[bool](`!!document.querySelector('#r-right .rtabs #tab-timeline') && !document.querySelector('#r-main #tab-timeline') && !!document.querySelector('#r-right .rbody > #v-timeline:not([hidden])')`)))
	waitFor(t, "layout.json keeps the Timeline on the right", func() bool {
		r := kept().Regions["right"]
		return r != nil && slices.Contains(r.Panels, "timeline") && r.Active == "timeline" && !r.Hidden
	})

	// Ctrl+Shift+J (the agent chat's own key) shows the chat in its region again.
	step(t, ctx, shot, "the agent chat's key brings it to the front of the right side",
		chromedp.KeyEvent("j", chromedp.KeyModifiers(chromedp.ModifierCtrl, chromedp.ModifierShift)),
		void(chromedp.Poll[bool](`!!document.querySelector('#r-right .rbody > #v-chat:not([hidden])') && document.querySelector('#r-right #v-timeline').hidden`)))

	step(t, ctx, shot, "resize the right side by its edge",
		void(chromedp.Evaluate[bool](`(window.__w = document.getElementById('r-right').getBoundingClientRect().width, true)`)))
	dragTo(t, ctx, shot, "drag the right side's edge", `.split[data-split="right"]`, `#tab-review`)
	step(t, ctx, shot, "the right side is wider",
		void(chromedp.Poll[bool](`document.getElementById('r-right').getBoundingClientRect().width > window.__w + 40`)))
	waitFor(t, "layout.json keeps the right side's size", func() bool {
		r := kept().Regions["right"]
		return r != nil && r.Size > 400
	})

	step(t, ctx, shot, "after a reload the layout is the same",
		chromedp.Reload(),
		clickOf(`#task-list li[data-id="`+id+`"]`),
		void(chromedp.Poll[bool](shown("right")+` && `+shown("bottom")+` && !!document.querySelector('#r-right .rtabs #tab-timeline') && !document.querySelector('#r-main #tab-timeline')`)))
	step(t, ctx, shot, "the Timeline's tab on the right still shows it",
		clickOf(`#r-right #tab-timeline`),
		void(chromedp.Poll[bool](`!!document.querySelector('#r-right .rbody > #v-timeline:not([hidden])')`)))

	step(t, ctx, shot, "hide the main area from the View menu",
		clickOf(`#menubar [data-menu="View"]`),
		clickOf(`#menubar [data-cmd="layout.main"]`),
		void(chromedp.Poll[bool](hidden("main")+` && `+shown("bottom"))))
	step(t, ctx, shot, "Ctrl+J with the main area hidden shows the main area: one of them always shows",
		chromedp.KeyEvent("j", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		void(chromedp.Poll[bool](hidden("bottom")+` && `+shown("main"))))
	waitFor(t, "layout.json has the main area shown", func() bool {
		l := kept()
		return l.Regions["main"] != nil && !l.Regions["main"].Hidden && l.Regions["bottom"] != nil && l.Regions["bottom"].Hidden
	})

	step(t, ctx, shot, "Reset the layout from the palette",
		chromedp.KeyEvent("k", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.SendKeys(chromedp.CSS(`#pal-input`), "reset the layout"),
		chromedp.KeyEvent("\r"),
		void(chromedp.Poll[bool](`!!document.querySelector('#r-main .rtabs #tab-timeline') && `+hidden("right")+` && `+hidden("bottom"))))
	waitFor(t, "layout.json gone", func() bool { _, err := os.Stat(d.layoutPath()); return os.IsNotExist(err) })
}
