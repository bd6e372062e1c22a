package gitstate

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"
)

// ConfigKeys reads a git config file into its keys, each written as git
// names it (section[.subsection].key, section and key lower-cased) with
// every value it is given, in order. It reads what git writes and what a
// person types: [section], [section "sub"], the old [section.sub], key =
// value, a bare key (true), quotes, escapes, comments and lines continued
// with a backslash. A line it cannot read is kept under the key "?" so that
// a change to it still shows.
func ConfigKeys(b []byte) map[string][]string {
	out := map[string][]string{}
	section := ""
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimRight(lines[i], "\r")
		// A value continued on the next line.
		for strings.HasSuffix(line, "\\") && !strings.HasSuffix(line, "\\\\") && i+1 < len(lines) {
			i++
			line = line[:len(line)-1] + strings.TrimRight(lines[i], "\r")
		}
		t := strings.TrimSpace(line)
		if t == "" || t[0] == '#' || t[0] == ';' {
			continue
		}
		if t[0] == '[' {
			end := strings.IndexByte(t, ']')
			if end < 0 {
				out["?"] = append(out["?"], t)
				section = "?"
				continue
			}
			section = sectionName(t[1:end])
			rest := strings.TrimSpace(t[end+1:])
			if rest == "" || rest[0] == '#' || rest[0] == ';' {
				continue
			}
			t = rest // git allows a key on the section's line
		}
		k, v, hasValue := strings.Cut(t, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		val := "true"
		if hasValue {
			val = configValue(v)
		}
		name := k
		if section != "" {
			name = section + "." + k
		}
		out[name] = append(out[name], val)
	}
	return out
}

// sectionName is `core`, `remote "origin"` or `branch.main` as git names it:
// remote.origin, branch.main.
func sectionName(s string) string {
	s = strings.TrimSpace(s)
	if name, sub, ok := strings.Cut(s, " "); ok {
		sub = strings.TrimSpace(sub)
		sub = strings.TrimSuffix(strings.TrimPrefix(sub, `"`), `"`)
		sub = strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(sub)
		return strings.ToLower(name) + "." + sub
	}
	if name, sub, ok := strings.Cut(s, "."); ok {
		return strings.ToLower(name) + "." + strings.ToLower(sub)
	}
	return strings.ToLower(s)
}

// configValue reads a value as git does: quotes removed, escapes read, an
// unquoted # or ; starts a comment, and outer spaces dropped.
func configValue(v string) string {
	var b strings.Builder
	quoted := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '"':
			quoted = !quoted
		case c == '\\' && i+1 < len(v):
			i++
			switch v[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'b':
				b.WriteByte('\b')
			default:
				b.WriteByte(v[i])
			}
		case !quoted && (c == '#' || c == ';'):
			return strings.TrimSpace(b.String())
		default:
			b.WriteByte(c)
		}
	}
	return strings.TrimSpace(b.String())
}

// ConfigDiff lists, in name order, the keys new adds or changes against old
// ("core.fsmonitor = …", every value of a key given more than once) and the
// keys it removes ("core.editor removed").
func ConfigDiff(old, new []byte) []string {
	o, n := ConfigKeys(old), ConfigKeys(new)
	var names []string
	for k := range n {
		names = append(names, k)
	}
	for k := range o {
		if _, ok := n[k]; !ok {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	var out []string
	for _, k := range names {
		nv, inNew := n[k]
		shown := printable(k)
		if !inNew {
			out = append(out, shown+" removed")
			continue
		}
		if slices.Equal(o[k], nv) {
			continue
		}
		q := make([]string, len(nv))
		for i, v := range nv {
			q[i] = fmt.Sprintf("%q", truncate(v, 120))
		}
		out = append(out, shown+" = "+strings.Join(q, ", "))
	}
	return out
}

// printable is s with every control character and invalid byte as "?":
// a key is shown as read, never as a terminal would act on it.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError || (r >= 0x80 && r < 0xa0) {
			return '?'
		}
		return r
	}, s)
}

// DescribeConfig fills in the Keys of every config change in effs: what
// the copy's file adds, changes or removes against the folder's, read from
// both repositories.
func DescribeConfig(folderRoot, copyRoot string, effs []*Effects) {
	for _, e := range effs {
		if len(e.Config) == 0 || e.Gone || e.Made || e.Outside {
			continue
		}
		fr, err1 := gitDirIn(folderRoot, e.Repo)
		cr, err2 := gitDirIn(copyRoot, e.Repo)
		var fl, cl layout
		if err1 == nil && err2 == nil {
			fl, err1 = openLayout(fr.GitDir)
			cl, err2 = openLayout(cr.GitDir)
		}
		for i := range e.Config {
			c := &e.Config[i]
			if err1 != nil || err2 != nil {
				c.Keys = []string{"(the keys could not be read)"}
				continue
			}
			old := readSmall(configFiles(fl)[c.Name])
			now := readSmall(configFiles(cl)[c.Name])
			c.Keys = ConfigDiff(old, now)
			if len(c.Keys) == 0 {
				c.Keys = []string{"(only its layout changed)"}
			}
		}
	}
}

// readSmall reads a regular file of at most 1 MiB; nil otherwise.
func readSmall(p string) []byte {
	st, err := os.Lstat(p)
	if err != nil || !st.Mode().IsRegular() || st.Size() > 1<<20 {
		return nil
	}
	b, err := os.ReadFile(filepath.Clean(p))
	if err != nil {
		return nil
	}
	return b
}

func configLine(c FileChange) string {
	what := c.Name + " " + verb(c.Kind)
	if len(c.Keys) > 0 {
		what += ": " + strings.Join(c.Keys, "; ")
	}
	return fmt.Sprintf("%s (it can make the next git command run code)", what)
}
