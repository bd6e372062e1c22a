// Package text is the built-in previewer for text and code: numbered lines,
// the language named by the file's name, packed JSON or XML laid out on
// request (up to 1 MB). It is the previewers' last resort: it accepts any
// name that is not a known binary format and refuses bytes that are not
// text (a NUL byte, or mostly bytes that are not UTF-8).
package text

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/kulehq/kule/plugins/previewer/names"
	"github.com/kulehq/kule/sdk/previewer"
)

// Limits of the text previewer.
const (
	// MaxFormat is the largest file laid out on request.
	MaxFormat = 1 << 20
	// MaxLine is the most bytes of one line shown; the rest is cut with "…".
	MaxLine = 8 << 10
	// sniff is how many leading bytes are looked at for a NUL.
	sniff = 8000
)

// Previewer shows text files.
type Previewer struct{}

var _ previewer.Previewer = Previewer{}

// New returns the text previewer.
func New() previewer.Previewer { return Previewer{} }

// Name is "text".
func (Previewer) Name() string { return "text" }

// Accepts any name but those of known binary formats (names.Text).
func (Previewer) Accepts(p string) bool { return names.Text(p) }

// Language names the language of a file by its name ("" when unknown).
func Language(p string) string {
	base := path.Base(p)
	switch base {
	case "Makefile", "GNUmakefile", "makefile":
		return "make"
	case "Dockerfile", "Containerfile":
		return "dockerfile"
	case "go.mod", "go.sum":
		return "go-module"
	}
	return languages[strings.ToLower(path.Ext(base))]
}

var languages = map[string]string{
	".go": "go", ".rs": "rust", ".ts": "typescript", ".tsx": "typescript", ".js": "javascript",
	".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript", ".py": "python", ".cs": "csharp",
	".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".hpp": "cpp", ".java": "java", ".kt": "kotlin",
	".rb": "ruby", ".php": "php", ".swift": "swift", ".sh": "shell", ".bash": "shell", ".zsh": "shell",
	".json": "json", ".xml": "xml", ".svg": "xml", ".html": "html", ".htm": "html", ".css": "css",
	".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".ini": "ini", ".sql": "sql", ".md": "markdown",
	".csv": "csv", ".tsv": "tsv", ".txt": "text", ".proto": "protobuf", ".lua": "lua", ".cedar": "cedar",
}

// Preview numbers the lines of req.Content.
func (Previewer) Preview(_ context.Context, req previewer.Request) (previewer.Response, error) {
	src, notes, err := Decode(req.Content)
	if err != nil {
		return previewer.Response{}, err
	}
	lang := Language(req.Path)
	if req.Format {
		out, note := format(lang, src)
		src = out
		if note != "" {
			notes = append(notes, note)
		}
	} else if (lang == "json" || lang == "xml") && len(src) <= MaxFormat && packed(src) {
		notes = append(notes, "packed "+strings.ToUpper(lang)+": ask to format it for reading")
	}
	resp := previewer.Response{Kind: previewer.KindText, Language: lang, Notes: notes}
	resp.Blocks, resp.Truncated = Lines(src, req.Limit(), &resp.Notes)
	return resp, nil
}

// Decode turns file bytes into UTF-8 text: UTF-8 as it is (a BOM dropped),
// UTF-16 with a BOM converted, and other bytes that are mostly text with
// each byte that is not UTF-8 shown as U+FFFD (and a note saying so). Bytes
// that are not text are ErrCannotPreview.
func Decode(b []byte) (string, []string, error) {
	switch {
	case bytes.HasPrefix(b, []byte{0xEF, 0xBB, 0xBF}):
		b = b[3:]
	case bytes.HasPrefix(b, []byte{0xFF, 0xFE}), bytes.HasPrefix(b, []byte{0xFE, 0xFF}):
		return decodeUTF16(b)
	}
	head := b
	if len(head) > sniff {
		head = head[:sniff]
	}
	if i := bytes.IndexByte(head, 0); i >= 0 {
		return "", nil, fmt.Errorf("%w: binary content (a zero byte at offset %d), not text", previewer.ErrCannotPreview, i)
	}
	if utf8.Valid(b) {
		return string(b), nil, nil
	}
	bad := 0
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			bad++
		}
		i += n
	}
	if bad*10 > len(b)*3 {
		return "", nil, fmt.Errorf("%w: binary content (%d of %d bytes are not UTF-8), not text", previewer.ErrCannotPreview, bad, len(b))
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), []string{fmt.Sprintf("not UTF-8: %d bytes that are not are shown as \uFFFD", bad)}, nil
}

func decodeUTF16(b []byte) (string, []string, error) {
	big := b[0] == 0xFE
	b = b[2:]
	if len(b)%2 != 0 {
		return "", nil, fmt.Errorf("%w: UTF-16 text of an odd number of bytes (truncated)", previewer.ErrCannotPreview)
	}
	u := make([]uint16, len(b)/2)
	for i := range u {
		if big {
			u[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
		} else {
			u[i] = uint16(b[2*i+1])<<8 | uint16(b[2*i])
		}
		if u[i] == 0 {
			return "", nil, fmt.Errorf("%w: binary content (a zero character at %d), not text", previewer.ErrCannotPreview, i)
		}
	}
	return string(utf16.Decode(u)), []string{"UTF-16 text, shown as UTF-8"}, nil
}

// Lines splits src into numbered line blocks, at most limit of them, each cut
// at MaxLine bytes. It says whether lines were left out, and adds a note
// to notes when a line was cut.
func Lines(src string, limit int, notes *[]string) ([]previewer.Block, bool) {
	n := strings.Count(src, "\n") + 1
	if strings.HasSuffix(src, "\n") {
		n--
	}
	if n > limit {
		n = limit
	}
	blocks := make([]previewer.Block, 0, n)
	lines := make([]previewer.Line, n) // one allocation for every line
	cut := 0
	for i := 0; i < n; i++ {
		line, rest, found := strings.Cut(src, "\n")
		src = rest
		line = strings.TrimSuffix(line, "\r")
		if len(line) > MaxLine {
			line = Cut(line, MaxLine) + "…"
			cut++
		}
		lines[i] = previewer.Line{Number: i + 1, Text: line}
		blocks = append(blocks, previewer.Block{Line: &lines[i]})
		if !found {
			src = ""
			break
		}
	}
	if cut > 0 {
		*notes = append(*notes, fmt.Sprintf("%d lines longer than %d bytes are cut", cut, MaxLine))
	}
	return blocks, src != ""
}

// Cut is s cut to at most n bytes without splitting a character.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// packed says whether text reads as laid out for machines: few lines for
// its size.
func packed(src string) bool {
	return len(src) > 200 && strings.Count(src, "\n") < len(src)/400+1
}

// format lays out JSON or XML for reading; anything else, or a file over
// MaxFormat, or one that does not parse, stays as it is with a note.
func format(lang, src string) (string, string) {
	if lang != "json" && lang != "xml" {
		return src, ""
	}
	if len(src) > MaxFormat {
		return src, fmt.Sprintf("not formatted: larger than %d bytes", MaxFormat)
	}
	if lang == "json" {
		var buf bytes.Buffer
		if err := json.Indent(&buf, []byte(src), "", "  "); err != nil {
			return src, "not formatted: not valid JSON (" + err.Error() + ")"
		}
		return buf.String(), "formatted JSON"
	}
	out, err := FormatXML(src)
	if err != nil {
		return src, "not formatted: " + err.Error()
	}
	return out, "formatted XML"
}

// FormatXML re-indents an XML document, each element, comment or text on
// its own line, written as the file spells it. It expands no entity beyond
// XML's five (encoding/xml knows no DTD): a DOCTYPE that declares entities
// is kept as written, and a reference to one of them is an error, so
// neither entity expansion nor an external entity is ever followed.
func FormatXML(src string) (string, error) {
	dec := xml.NewDecoder(strings.NewReader(src))
	dec.Strict = true
	var buf strings.Builder
	depth := 0
	prev := int64(0)
	for {
		tok, err := dec.RawToken()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("not valid XML (%v)", err)
		}
		off := dec.InputOffset()
		raw := strings.TrimSpace(src[prev:off])
		prev = off
		if _, ok := tok.(xml.EndElement); ok && depth > 0 {
			depth--
		}
		if raw != "" {
			buf.WriteString(strings.Repeat("  ", depth))
			buf.WriteString(raw)
			buf.WriteByte('\n')
		}
		if _, ok := tok.(xml.StartElement); ok {
			depth++
		}
	}
	return buf.String(), nil
}
