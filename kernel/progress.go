package kernel

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/kulehq/kule/kernel/internal/apply"
)

// counted has a commit or an undo count its work into the progress under
// ctx, if any: the totals are the files the change stages (and the bytes
// of those that come from the task's copy; a checkpoint's blobs are
// counted as they are read), and each file staged adds its bytes as they
// are read.
func counted(ctx context.Context, copyDir string, ops []apply.Op, open apply.Opener) apply.Opener {
	p := progressFrom(ctx)
	if p == nil {
		return open
	}
	var files, size int64
	add := func(src string) {
		if src == "" {
			return
		}
		files++
		if rel, ok := strings.CutPrefix(src, "copy:"); ok {
			if fi, err := os.Lstat(filepath.Join(copyDir, rel)); err == nil {
				size += fi.Size()
			}
		}
	}
	for _, op := range ops {
		add(op.Src)
		for _, e := range op.Tree {
			add(e.Src)
		}
	}
	p.TotalFiles.Store(files)
	p.TotalBytes.Store(size)
	return func(src string) (io.ReadCloser, error) {
		rc, err := open(src)
		if err != nil {
			return nil, err
		}
		p.Files.Add(1)
		return &countingReader{ReadCloser: rc, p: p}, nil
	}
}

type countingReader struct {
	io.ReadCloser
	p *Progress
}

func (r *countingReader) Read(b []byte) (int, error) {
	n, err := r.ReadCloser.Read(b)
	r.p.Bytes.Add(int64(n))
	return n, err
}
