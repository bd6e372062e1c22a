package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// pathMark brackets the login shell's PATH in its output, so what its
// profile prints (a greeting, a version manager's notice) is left aside.
const pathMark = "__KULE_LOGIN_PATH__"

// loginPATH asks the person's login shell for the PATH their terminals get
// (~/.profile, ~/.bash_profile, ~/.zprofile, and the rc files of an
// interactive shell, where nvm and volta put themselves). A launcher starts
// programs with the desktop session's PATH, which lacks those folders, and
// agents must find npx there. It gives "" when the shell cannot say within
// the timeout.
func loginPATH(ctx context.Context, shell string, timeout time.Duration) string {
	if shell == "" {
		shell = "/bin/sh"
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	args := []string{"-l", "-c"}
	switch filepath.Base(shell) {
	case "bash", "zsh", "fish":
		args = []string{"-l", "-i", "-c"}
	}
	script := `printf '` + pathMark + `%s` + pathMark + `' "$PATH"`
	cmd := exec.CommandContext(ctx, shell, append(args, script)...)
	cmd.Stdin = nil // /dev/null: an interactive shell must not wait for input
	cmd.Stderr = nil
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	_, rest, ok := bytes.Cut(out, []byte(pathMark))
	if !ok {
		return ""
	}
	p, _, ok := bytes.Cut(rest, []byte(pathMark))
	if !ok {
		return ""
	}
	return strings.TrimSpace(string(p))
}

// mergePATH puts the login shell's folders first and keeps the session's
// others after them, each folder once.
func mergePATH(login, session string) string {
	seen := map[string]bool{}
	var out []string
	for _, p := range append(filepath.SplitList(login), filepath.SplitList(session)...) {
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, p)
	}
	return strings.Join(out, string(os.PathListSeparator))
}
