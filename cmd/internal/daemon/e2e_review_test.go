package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestAppReviewShowsLinesLinksAndFolders: under a changed file its line diff (a + b → b + a),
// a link row says where it points, an added folder lists its files.
func TestAppReviewShowsLinesLinksAndFolders(t *testing.T) {
	ctx, shot := browser(t)
	d := startDaemon(t, Config{})
	folder := sampleFolder(t)
	must(t, os.WriteFile(filepath.Join(folder, "add.go"), []byte("package x\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n"), 0o644))
	rep, err := d.k.NewTask(context.Background(), folder)
	must(t, err)
	cp := rep.Task.Paths.Copy
	must(t, os.WriteFile(filepath.Join(cp, "add.go"), []byte("package x\n\nfunc Add(a, b int) int {\n\treturn b + a\n}\n"), 0o644))
	must(t, os.Symlink("notes/plan.md", filepath.Join(cp, "plan-link")))
	must(t, os.MkdirAll(filepath.Join(cp, "docs", "guide"), 0o755))
	must(t, os.WriteFile(filepath.Join(cp, "docs", "guide", "intro.md"), []byte("# Intro\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(cp, "docs", "guide", "usage.md"), []byte("# Usage\n"), 0o644))

	step(t, ctx, shot, "open Review",
		chromedp.Navigate(d.URL()),
		clickOf(`#task-list li[data-id="`+rep.Task.ID+`"]`),
		chromedp.KeyEvent("2", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.WaitVisible(chromedp.CSS(`#changes li[data-path="add.go"] button.showlines`)),
		clickOf(`#changes li[data-path="add.go"] button.showlines`),
		chromedp.WaitVisible(chromedp.CSS(`#changes li[data-path="add.go"] table.hunk`)))
	lines := value(t, ctx, shot, "read the lines", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#changes li[data-path="add.go"] table.hunk tr')].map((r) => r.className + ' ' + r.querySelector('.code').textContent)`))
	joined := strings.Join(lines, "\n")
	if !strings.Contains(joined, "del \treturn a + b") || !strings.Contains(joined, "ins \treturn b + a") || !strings.Contains(joined, "ctx func Add(a, b int) int {") {
		t.Fatalf("the diff of add.go reads:\n%s", joined)
	}
	link := value(t, ctx, shot, "read the link row", textOf(`#changes li[data-path="plan-link"] .path`))
	if !strings.Contains(link, "→ notes/plan.md") {
		t.Fatalf("the link row says %q; want where it points", link)
	}
	step(t, ctx, shot, "expand the added folder",
		clickOf(`#changes li[data-path="docs"] button.showfolder`),
		chromedp.WaitVisible(chromedp.CSS(`#changes li[data-path="docs"] .tree li`)))
	inside := value(t, ctx, shot, "read the folder", textOf(`#changes li[data-path="docs"] .tree`))
	if !strings.Contains(inside, "guide/") {
		t.Fatalf("the added folder shows %q", inside)
	}
	summary := value(t, ctx, shot, "read the row of the task", textOf(`#task-list li[data-id="`+rep.Task.ID+`"] .ts`))
	if strings.ContainsAny(summary, "+~»") {
		t.Fatalf("the task's row speaks CLI: %q", summary)
	}
	// No command ran: no home layer, and no home section (nor an error in its place).
	if shown := value(t, ctx, shot, "the home section", chromedp.Evaluate[string](`(() => { const b = document.getElementById('r-home'); return b.hidden ? '' : b.innerText || 'shown'; })()`)); shown != "" {
		t.Fatalf("with no home changes Review shows %q", shown)
	}
	checkNames(t, ctx, shot, "Review with lines")
}

// TestAppReviewOfThousandsOfChanges opens a Review of 5,000 changes in 50 folders: it is
// grouped by folder (collapsed, counts on each), filterable, and it reports how long it took
// from the click to a drawn, usable list, and how long a filter takes to draw (the numbers
// go in docs/performance.md; no time is asserted).
func TestAppReviewOfThousandsOfChanges(t *testing.T) {
	ctx, shot := browser(t)
	d := startDaemon(t, Config{})
	// The folders are in the folder already, so the changes are 5,000 files (not one added
	// folder).
	src := sampleFolder(t)
	const folders, each = 50, 100
	for f := range folders {
		dir := filepath.Join(src, "src", fmt.Sprintf("part-%02d", f))
		must(t, os.MkdirAll(dir, 0o755))
		must(t, os.WriteFile(filepath.Join(dir, "keep"), nil, 0o644))
	}
	rep, err := d.k.NewTask(context.Background(), src)
	must(t, err)
	for f := range folders {
		dir := filepath.Join(rep.Task.Paths.Copy, "src", fmt.Sprintf("part-%02d", f))
		for i := range each {
			must(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.txt", i)), []byte("x\n"), 0o644))
		}
	}
	step(t, ctx, shot, "open the task",
		chromedp.Navigate(d.URL()),
		clickOf(`#task-list li[data-id="`+rep.Task.ID+`"]`),
		chromedp.WaitVisible(chromedp.CSS(`#taskview`)))
	ms := value(t, ctx, shot, "open Review and time it", chromedp.Poll[float64](`(() => {
		if (!window.__t0) { window.__t0 = performance.now(); document.getElementById('tab-review').click(); return null; }
		const n = document.querySelectorAll('#changes li.fgroup').length;
		if (n < 1) return null;
		return new Promise((r) => requestAnimationFrame(() => r(performance.now() - window.__t0)));
	})()`))
	groups := value(t, ctx, shot, "count the groups", chromedp.Evaluate[int](`document.querySelectorAll('#changes li.fgroup').length`))
	rows := value(t, ctx, shot, "count the rows", chromedp.Evaluate[int](`document.querySelectorAll('#changes li[data-path]').length`))
	if groups < folders || rows > 1000 {
		t.Fatalf("5,000 changes drew %d folder groups and %d rows; want them grouped by folder and drawn a part at a time", groups, rows)
	}
	head := value(t, ctx, shot, "read a folder's header", textOf(`#changes li.fgroup[data-folder="src/part-07"] .fhead`))
	if !strings.Contains(head, "100 added") {
		t.Fatalf("a folder's header reads %q", head)
	}
	filterMs := value(t, ctx, shot, "filter and time it", chromedp.Evaluate[float64](`(() => {
		const inp = document.getElementById('r-filter');
		const t0 = performance.now();
		inp.value = 'part-07/f00';
		inp.dispatchEvent(new Event('input'));
		return performance.now() - t0;
	})()`))
	shown := value(t, ctx, shot, "read the filter's count", textOf(`#r-filter-count`))
	if !strings.Contains(shown, "10 of 5000") {
		t.Fatalf("the filter says %q; want 10 of 5000 shown", shown)
	}
	step(t, ctx, shot, "a filtered row is usable",
		clickOf(`#changes li[data-path="src/part-07/f003.txt"] button.showlines`),
		chromedp.WaitVisible(chromedp.CSS(`#changes li[data-path="src/part-07/f003.txt"] table.hunk`)))
	// The daemon's part: the longest read of the task's status since the click.
	fetchMs := value(t, ctx, shot, "time the status read", chromedp.Evaluate[float64](`Math.max(0, ...performance.getEntriesByType('resource').filter((e) => e.startTime >= window.__t0 && /\/api\/tasks\/[0-9a-f]+$/.test(new URL(e.name).pathname)).map((e) => e.duration))`))
	t.Logf("review of 5000 changes: %.0f ms from the click to a drawn, usable list, of which %.0f ms the daemon's status and judging and %.0f ms the page; a filter redraws in %.1f ms", ms, fetchMs, ms-fetchMs, filterMs)
}

// TestAppReviewIgnoredAlsoCommitThese: a change .gitignore excludes is listed under Review,
// folded, and stays out of a plain commit; with "Also commit these" ticked the next commit
// takes it in.
func TestAppReviewIgnoredAlsoCommitThese(t *testing.T) {
	ctx, shot := browser(t)
	d := startDaemon(t, Config{})
	folder := sampleFolder(t)
	must(t, os.WriteFile(filepath.Join(folder, ".gitignore"), []byte("build/\n"), 0o644))
	must(t, os.MkdirAll(filepath.Join(folder, "build"), 0o755))
	rep, err := d.k.NewTask(context.Background(), folder)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(rep.Task.Paths.Copy, "build", "out.txt"), []byte("built\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(rep.Task.Paths.Copy, "README.md"), []byte("# Project\n\nChanged.\n"), 0o644))
	step(t, ctx, shot, "open Review",
		chromedp.Navigate(d.URL()),
		clickOf(`#task-list li[data-id="`+rep.Task.ID+`"]`),
		chromedp.KeyEvent("2", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.WaitVisible(chromedp.CSS(`#r-ignored summary`)))
	if s := value(t, ctx, shot, "read the fold", textOf(`#r-ignored summary`)); !strings.Contains(s, "1 change that .gitignore keeps out") {
		t.Fatalf("the ignored fold says %q", s)
	}
	if n := value(t, ctx, shot, "ignored rows", chromedp.Evaluate[int](`document.querySelectorAll('#r-ignored li[data-path="build/out.txt"]').length`)); n != 1 {
		t.Fatalf("build/out.txt listed %d times under the ignored", n)
	}
	step(t, ctx, shot, "a plain commit",
		clickOf(`#btn-commit`),
		chromedp.WaitNotPresent(chromedp.CSS(`#changes li[data-path="README.md"]`)))
	if _, err := os.Stat(filepath.Join(folder, "build", "out.txt")); err == nil {
		t.Fatal("a plain commit took in what .gitignore excludes")
	}
	step(t, ctx, shot, "Also commit these, then commit",
		chromedp.WaitVisible(chromedp.CSS(`#also-ignored`)),
		clickOf(`#also-ignored`),
		void(chromedp.Poll[bool](`document.getElementById('also-ignored').checked && !document.getElementById('btn-commit').disabled`)),
		clickOf(`#btn-commit`),
		chromedp.WaitNotVisible(chromedp.CSS(`#r-ignored`)))
	if readFile(filepath.Join(folder, "build", "out.txt")) != "built\n" {
		t.Fatal("Also commit these did not take build/out.txt in")
	}
}
