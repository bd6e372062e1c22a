package acp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// MaxFile is the largest file fs/read_text_file hands to an agent.
const MaxFile = 32 << 20

// files serves fs/* inside the copy. The agent names absolute paths as it
// sees them (under cwd); each is turned into a path relative to the copy and
// opened through an os.Root, so neither ".." nor a symlink leads outside.
type files struct {
	cwd  string // the copy as the agent sees it
	copy string // the copy on this machine
}

func (f files) rel(p string) (string, *RPCError) {
	if !filepath.IsAbs(p) {
		return "", &RPCError{Code: CodeInvalidParams, Message: fmt.Sprintf("%v: %q is not an absolute path", ErrOutsideCopy, p)}
	}
	rel, err := filepath.Rel(f.cwd, filepath.Clean(p))
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", &RPCError{Code: CodeInvalidParams, Message: fmt.Sprintf("%v: %s (the agent works in %s)", ErrOutsideCopy, p, f.cwd)}
	}
	return rel, nil
}

func fsError(op, p string, err error) *RPCError {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// The message is the one ACP's SDKs use for -32002: agents match
		// on it (Gemini CLI looks for "Resource not found").
		data, _ := json.Marshal(map[string]string{"uri": p})
		return &RPCError{Code: CodeNotFound, Message: "Resource not found: " + p, Data: data}
	case strings.Contains(err.Error(), "path escapes"):
		return &RPCError{Code: CodeInvalidParams, Message: fmt.Sprintf("%v: %s leads outside through a link", ErrOutsideCopy, p)}
	}
	return &RPCError{Code: CodeInternalError, Message: fmt.Sprintf("%s %s: %v", op, p, err)}
}

func (f files) read(p readFileParams) (readFileResult, *RPCError) {
	rel, rerr := f.rel(p.Path)
	if rerr != nil {
		return readFileResult{}, rerr
	}
	root, err := os.OpenRoot(f.copy)
	if err != nil {
		return readFileResult{}, fsError("read", p.Path, err)
	}
	defer root.Close()
	st, err := root.Stat(rel)
	if err != nil {
		return readFileResult{}, fsError("read", p.Path, err)
	}
	if !st.Mode().IsRegular() {
		return readFileResult{}, &RPCError{Code: CodeInvalidParams, Message: fmt.Sprintf("read %s: not a regular file", p.Path)}
	}
	if st.Size() > MaxFile {
		return readFileResult{}, &RPCError{Code: CodeInvalidParams, Message: fmt.Sprintf("read %s: %d bytes is more than %d; read it in a terminal", p.Path, st.Size(), MaxFile)}
	}
	b, err := root.ReadFile(rel)
	if err != nil {
		return readFileResult{}, fsError("read", p.Path, err)
	}
	return readFileResult{Content: sliceLines(string(b), p.Line, p.Limit)}, nil
}

// sliceLines returns limit lines from line (1-based), as fs/read_text_file asks.
func sliceLines(s string, line, limit *int) string {
	if line == nil && limit == nil {
		return s
	}
	lines := strings.SplitAfter(s, "\n")
	start := 0
	if line != nil && *line > 1 {
		start = *line - 1
	}
	if start >= len(lines) {
		return ""
	}
	end := len(lines)
	if limit != nil && *limit >= 0 && start+*limit < end {
		end = start + *limit
	}
	return strings.Join(lines[start:end], "")
}

func (f files) write(p writeFileParams) (string, *RPCError) {
	rel, rerr := f.rel(p.Path)
	if rerr != nil {
		return "", rerr
	}
	if rel == "." {
		return "", &RPCError{Code: CodeInvalidParams, Message: fmt.Sprintf("write %s: that is the working directory", p.Path)}
	}
	root, err := os.OpenRoot(f.copy)
	if err != nil {
		return "", fsError("write", p.Path, err)
	}
	defer root.Close()
	mode := fs.FileMode(0o644)
	if st, err := root.Stat(rel); err == nil {
		if !st.Mode().IsRegular() {
			return "", &RPCError{Code: CodeInvalidParams, Message: fmt.Sprintf("write %s: not a regular file", p.Path)}
		}
		mode = st.Mode().Perm()
	}
	if dir := path.Dir(filepath.ToSlash(rel)); dir != "." {
		if err := root.MkdirAll(filepath.FromSlash(dir), 0o755); err != nil {
			return "", fsError("write", p.Path, err)
		}
	}
	if err := root.WriteFile(rel, []byte(p.Content), mode); err != nil {
		return "", fsError("write", p.Path, err)
	}
	return filepath.ToSlash(rel), nil
}
