package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/kulehq/kule/kernel"
)

// progressFloor is the size of work worth a progress bar: below it the
// work is over before a bar would say anything. A test lowers it.
var progressFloor = struct {
	files int64
	bytes int64
}{files: 20_000, bytes: 256 << 20}

// withProgress runs fn with a progress bar on w while it works, when w is
// a terminal and the work (known once the kernel has walked the folder) is
// over progressFloor (kule new, commit, undo): files and bytes done, the rate, the time spent and
// the time left ([1m2s:3m4s]).
// Nothing is drawn when w is a file or a pipe: a script reads only what
// the command prints after.
func withProgress(ctx context.Context, w io.Writer, verb string, fn func(context.Context) error) error {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return fn(ctx)
	}
	p := &kernel.Progress{}
	done := make(chan struct{})
	drawn := make(chan struct{})
	go func() {
		defer close(drawn)
		drawProgress(f, verb, p, done)
	}()
	err := fn(kernel.WithProgress(ctx, p))
	close(done)
	<-drawn
	return err
}

// drawProgress shows p on f until done closes. Work over the floor that
// ends between two ticks still gets its bar drawn once, full, before it is
// cleared: what was done is said the same way however fast it went.
func drawProgress(f *os.File, verb string, p *kernel.Progress, done <-chan struct{}) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var bar *progressbar.ProgressBar
	var byFiles bool
	update := func() bool {
		files, bytes := p.TotalFiles.Load(), p.TotalBytes.Load()
		if bar == nil {
			if files < progressFloor.files && bytes < progressFloor.bytes {
				return false // not walked yet, or too small for a bar
			}
			width := 30
			if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols < 90 {
				width = max(10, cols-60)
			}
			// A change whose sizes are not all known ahead (an undo reads
			// its checkpoint's blobs) is measured in files.
			byFiles = bytes == 0
			total := bytes
			if byFiles {
				total = files
			}
			bar = progressbar.NewOptions64(max(total, 1),
				progressbar.OptionSetWriter(f),
				progressbar.OptionShowBytes(!byFiles),
				progressbar.OptionSetWidth(width),
				progressbar.OptionSetPredictTime(true),
				progressbar.OptionThrottle(100*time.Millisecond),
				progressbar.OptionSetRenderBlankState(true),
				progressbar.OptionUseANSICodes(true),
			)
		}
		if byFiles {
			bar.Describe(fmt.Sprintf("%s %s of %s files, %s", verb, commas(p.Files.Load()), commas(files), size(p.Bytes.Load())))
			_ = bar.Set64(p.Files.Load())
			return true
		}
		bar.Describe(fmt.Sprintf("%s %s of %s files, %s of %s", verb, commas(p.Files.Load()), commas(files), size(p.Bytes.Load()), size(bytes)))
		_ = bar.Set64(p.Bytes.Load())
		return true
	}
	for {
		select {
		case <-done:
			if update() {
				_ = bar.RenderBlank()
				_ = bar.Clear()
			}
			return
		case <-tick.C:
			update()
		}
	}
}

// size says n bytes in KiB, MiB or GiB, with one decimal.
func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
}

// commas writes n with thousands separators.
func commas(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
