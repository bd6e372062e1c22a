package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestAppReviewHomeChanges: what a command changed in its home shows under Review, files that
// run at every start first; Show gives its lines, Apply puts it into the person's home (here a
// stand-in home), Undo takes it back.
func TestAppReviewHomeChanges(t *testing.T) {
	home := t.TempDir()
	must(t, os.WriteFile(filepath.Join(home, ".bashrc"), []byte("# mine\n"), 0o644))
	t.Setenv("HOME", home)
	ctx, shot := browser(t)
	d := startDaemon(t, Config{})
	rep, err := d.k.NewTask(context.Background(), sampleFolder(t))
	must(t, err)
	if _, err := d.Exec(context.Background(), rep.Task, []string{"sh", "-c", `echo 'alias ll="ls -l"' >> "$HOME/.bashrc" && echo x > "$HOME/notes.txt"`}, "change the home"); err != nil {
		t.Fatal(err)
	}
	step(t, ctx, shot, "Review lists the home changes",
		chromedp.Navigate(d.URL()),
		clickOf(`#task-list li[data-id="`+rep.Task.ID+`"]`),
		chromedp.KeyEvent("2", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.WaitVisible(chromedp.CSS(`#r-home li[data-home=".bashrc"]`)))
	first := value(t, ctx, shot, "the first home row", chromedp.Evaluate[string](`document.querySelector('#r-home li[data-home]').dataset.home`))
	if first != ".bashrc" {
		t.Fatalf("the first home change is %q; want .bashrc, which runs at every start", first)
	}
	step(t, ctx, shot, "Show its lines",
		clickOf(`#r-home li[data-home=".bashrc"] button.showlines`),
		chromedp.WaitVisible(chromedp.CSS(`#r-home li[data-home=".bashrc"] table.hunk`)))
	lines := value(t, ctx, shot, "read them", textOf(`#r-home li[data-home=".bashrc"] table.hunk`))
	if !strings.Contains(lines, `alias ll="ls -l"`) || !strings.Contains(lines, "# mine") {
		t.Fatalf("the lines of ~/.bashrc read %q", lines)
	}
	if strings.Contains(readFile(filepath.Join(home, ".bashrc")), "alias") {
		t.Fatal("the home changed before Apply")
	}
	step(t, ctx, shot, "Apply it",
		clickOf(`#r-home li[data-home=".bashrc"] button[aria-label^="Apply"]`),
		void(chromedp.Poll[bool](`document.getElementById('toasts').innerText.includes('applied to your home')`)))
	if !strings.Contains(readFile(filepath.Join(home, ".bashrc")), `alias ll="ls -l"`) {
		t.Fatal("Apply did not put the task's ~/.bashrc into the home")
	}
	step(t, ctx, shot, "Undo it",
		clickOf(`#home-undo`),
		void(chromedp.Poll[bool](`document.getElementById('toasts').innerText.includes('as it was before the apply')`)))
	if got := readFile(filepath.Join(home, ".bashrc")); got != "# mine\n" {
		t.Fatalf("after Undo ~/.bashrc is %q", got)
	}
}
