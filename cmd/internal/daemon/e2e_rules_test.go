package daemon

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestAppForgetRule forgets a remembered rule from Settings → Remembered rules in Chromium: the
// page asks first, saying what will ask again; once forgotten the rule is gone from the page
// and from the kernel's rules (what kule rules lists), the other rule stays, and the next
// connection it let through asks again.
func TestAppForgetRule(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	ctx, shot := browser(t)
	cfg := Config{Kernel: newKernel(t)}
	cfg.Rules = &CedarRules{K: cfg.Kernel}
	d := startDaemon(t, cfg)
	rep, err := d.k.NewTask(context.Background(), sampleFolder(t))
	must(t, err)
	tk := rep.Task
	must(t, d.k.RememberHost(tk, "api.example.com:443"))
	must(t, d.k.RememberHost(tk, "cdn.example.com:443"))
	ask := Question{Task: tk.ID, Kind: KindConnection, Title: "Connect to cdn.example.com:443?", Subject: "cdn.example.com:443"}
	if q, err := d.Q.Post(ask); err != nil || q.State != Approved || q.By != "rule" {
		t.Fatalf("before: the remembered host should pass by its rule: %+v %v", q, err)
	}

	row := `#set-rules li[data-subject="cdn.example.com:443"]`
	step(t, ctx, shot, "Settings → Remembered rules lists both",
		chromedp.Navigate(d.URL()),
		clickOf(`#btn-settings`),
		clickOf(`#settings-nav a[data-section="rules"]`),
		void(chromedp.Poll[bool](`document.querySelectorAll('#set-rules li[data-rule]').length === 2`)))
	step(t, ctx, shot, "Forget… asks first, saying what will ask again",
		clickOf(row+` [data-forget]`),
		void(chromedp.Poll[bool](`(document.querySelector('`+row+` .rule-ask') || {}).innerText?.includes('A connection to cdn.example.com:443 from a task on')`)))
	checkNames(t, ctx, shot, "Settings → Remembered rules asking before Forget")
	shotAt1000(t, ctx, shot, "settings-forget-rule")
	step(t, ctx, shot, "Keep it leaves the rule",
		clickOf(row+` [data-forget-no]`),
		void(chromedp.Poll[bool](`document.querySelector('`+row+` .rule-ask').hidden`)))
	if rs, _ := d.k.RememberedRules(); len(rs) != 2 {
		t.Fatalf("Keep it forgot a rule: %d left", len(rs))
	}
	step(t, ctx, shot, "Forget it",
		clickOf(row+` [data-forget]`),
		clickOf(row+` [data-forget-yes]`),
		void(chromedp.Poll[bool](`!document.querySelector('`+row+`') && document.querySelectorAll('#set-rules li[data-rule]').length === 1 && document.getElementById('set-rules-done').innerText.includes('asks you again')`)))
	rs, err := d.k.RememberedRules()
	must(t, err)
	if len(rs) != 1 || rs[0].Subject != "api.example.com:443" {
		t.Fatalf("the kernel's rules after Forget: %+v, want api.example.com:443 alone", rs)
	}
	if q, err := d.Q.Post(ask); err != nil || q.State != Waiting {
		t.Fatalf("after: the forgotten host should ask again: %+v %v", q, err)
	}
}

// TestForgetNamesTheRule: DELETE /api/rules/N forgets rule N only when it is the rule the
// request names; a number that now holds another rule (one was forgotten in a terminal since
// the page listed them) forgets nothing.
func TestForgetNamesTheRule(t *testing.T) {
	cfg := Config{Kernel: newKernel(t)}
	d := startDaemon(t, cfg)
	rep, err := d.k.NewTask(context.Background(), sampleFolder(t))
	must(t, err)
	must(t, d.k.RememberHost(rep.Task, "one.example:443"))
	must(t, d.k.RememberHost(rep.Task, "two.example:443"))
	rs, err := d.k.RememberedRules()
	must(t, err)
	named := func(i int) string {
		return `{"subject":"` + rs[i].Subject + `","for":"` + rs[i].Rule.For + `","folder":"` + rs[i].Rule.Folder + `"}`
	}
	if code, body := call(t, d, http.MethodDelete, "/api/rules/1", named(1)); code != http.StatusConflict || !strings.Contains(body, "nothing was forgotten") {
		t.Fatalf("rule 1 named as rule 2: %d %s, want 409", code, body)
	}
	if code, body := call(t, d, http.MethodDelete, "/api/rules/1", ""); code != http.StatusConflict {
		t.Fatalf("a number alone: %d %s, want 409", code, body)
	}
	if code, body := call(t, d, http.MethodDelete, "/api/rules/x", named(0)); code != http.StatusBadRequest {
		t.Fatalf("not a number: %d %s, want 400", code, body)
	}
	if after, _ := d.k.RememberedRules(); len(after) != 2 {
		t.Fatalf("a refused Forget forgot: %d rules left", len(after))
	}
	if code, body := call(t, d, http.MethodDelete, "/api/rules/2", named(1)); code != 200 || !strings.Contains(body, "two.example:443") {
		t.Fatalf("forget rule 2: %d %s", code, body)
	}
	if after, _ := d.k.RememberedRules(); len(after) != 1 || after[0].Subject != "one.example:443" {
		t.Fatalf("after forgetting rule 2: %+v", after)
	}
}
