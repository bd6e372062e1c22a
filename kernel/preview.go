package kernel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/kulehq/kule/kernel/internal/beneath"
	"github.com/kulehq/kule/kernel/internal/pluginhost"
	"github.com/kulehq/kule/kernel/internal/relpath"
	"github.com/kulehq/kule/kernel/internal/task"
	"github.com/kulehq/kule/sdk/previewer"
)

// MaxPreviewBytes is the largest file previewed. Larger files are refused
// before a byte of them is read, so no file can make a preview hold more.
const MaxPreviewBytes = 16 << 20

// Sentinel errors of previews.
var (
	// ErrCannotPreview: the file could not be previewed (no previewer reads
	// it, it is larger than MaxPreviewBytes, not a regular file, or its
	// previewer refused its content). The file itself is never touched.
	ErrCannotPreview = errors.New("cannot preview")
)

// PreviewOptions tune one preview.
type PreviewOptions struct {
	// MaxBlocks is the most blocks wanted; 0 is the previewer's default.
	MaxBlocks int
	// Format asks for packed JSON or XML laid out for reading.
	Format bool
	// Crop asks a picture's previewer for this region as a PNG
	// (Preview.CropPNG); it is refused when outside the picture.
	Crop *previewer.Region
}

// Preview is a file's safe render model: plain data the app and the terminal
// draw themselves, never markup.
type Preview struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
	// Previewer is who read it ("text (built-in)").
	Previewer string `json:"previewer"`
	previewer.Response
}

// PreviewBlock is one drawable piece of a preview. See [previewer.Block].
type PreviewBlock = previewer.Block

// Preview reads the file rel as the task's copy holds it now — beneath the
// copy's root, never following a link in any element, a regular file of at
// most MaxPreviewBytes — and has the previewer for its name render it, out
// of process. Every failure is an error wrapping ErrCannotPreview that says
// why; nothing is written anywhere.
func (k *Kernel) Preview(ctx context.Context, t *task.Task, h *pluginhost.Host, rel string, opts PreviewOptions) (*Preview, error) {
	data, err := ReadCopyFile(t, rel, MaxPreviewBytes)
	if err != nil {
		return nil, err
	}
	return PreviewBytes(ctx, h, rel, data, opts)
}

// ReadCopyFile reads the regular file rel of the task's copy, of at most max
// bytes, beneath the copy's root and never following a link.
func ReadCopyFile(t *task.Task, rel string, max int64) ([]byte, error) {
	rel = strings.Trim(rel, "/")
	if err := relpath.Check(rel); err != nil {
		return nil, fmt.Errorf("%w %s: %v; give a path inside the task's copy, as kule status shows it", ErrCannotPreview, rel, err)
	}
	root, err := beneath.Open(t.Paths.Copy)
	if err != nil {
		return nil, fmt.Errorf("%w %s: the task's copy cannot be opened: %v", ErrCannotPreview, rel, err)
	}
	defer root.Close()
	f, err := root.Open(rel)
	if errors.Is(err, beneath.ErrLink) {
		return nil, fmt.Errorf("%w %s: %v; a link is never followed, so nothing outside the copy was read (preview the file it points to by its own path)", ErrCannotPreview, rel, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w %s: %v", ErrCannotPreview, rel, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%w %s: %v", ErrCannotPreview, rel, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w %s: not a regular file (%s); only files are previewed", ErrCannotPreview, rel, typeName(st.Mode()))
	}
	if st.Size() > max {
		return nil, fmt.Errorf("%w %s: %d bytes, larger than the %d MiB a preview reads; nothing of it was read (open it with a program of your own)", ErrCannotPreview, rel, st.Size(), max>>20)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%w %s: %v", ErrCannotPreview, rel, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%w %s: it grew past %d MiB while it was read; try again once the task is done with it", ErrCannotPreview, rel, max>>20)
	}
	return data, nil
}

// PreviewBytes has the previewer for rel's name render data (the review's
// before and after use it on the base's and the copy's bytes).
func PreviewBytes(ctx context.Context, h *pluginhost.Host, rel string, data []byte, opts PreviewOptions) (*Preview, error) {
	if len(data) > MaxPreviewBytes {
		return nil, fmt.Errorf("%w %s: %d bytes, larger than the %d MiB a preview reads", ErrCannotPreview, rel, len(data), MaxPreviewBytes>>20)
	}
	p := h.PreviewerFor(ctx, rel)
	if p == nil {
		return nil, fmt.Errorf("%w %s: no previewer reads %s files (kule plugins list shows the previewers)", ErrCannotPreview, rel, extName(rel))
	}
	r, err := p.Preview(ctx, previewer.Request{Path: rel, Content: data, MaxBlocks: opts.MaxBlocks, Format: opts.Format, Crop: opts.Crop})
	if errors.Is(err, previewer.ErrCannotPreview) {
		reason := strings.TrimPrefix(err.Error(), previewer.ErrCannotPreview.Error()+": ")
		return nil, fmt.Errorf("%w %s: %s (the %s read it; the file is as it was)", ErrCannotPreview, rel, reason, p)
	}
	if err != nil {
		return nil, fmt.Errorf("%w %s: %v (the file is as it was)", ErrCannotPreview, rel, err)
	}
	return &Preview{Path: rel, Size: int64(len(data)), Previewer: p.String(), Response: r}, nil
}

// typeName says what a file that is not a regular one is, in words a
// person reads ("a directory", not "d---------").
func typeName(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

func extName(rel string) string {
	if e := path.Ext(rel); e != "" {
		return strings.ToLower(e)
	}
	return "such"
}
