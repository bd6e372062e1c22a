// Package names says, by a file's name alone, which files each built-in
// previewer reads. It stands apart from the previewers so that kule can
// choose a previewer for a file without linking it: the previewers run in
// kule-plugins, and the spreadsheet and Markdown libraries they use would
// cost every kule command their start-up. Each previewer's Accepts is the
// function here.
package names

import (
	"path"
	"strings"
)

func ext(p string) string { return strings.ToLower(path.Ext(p)) }

// imageFormats are the picture formats by extension.
var imageFormats = map[string]string{".png": "png", ".jpg": "jpeg", ".jpeg": "jpeg", ".gif": "gif", ".webp": "webp"}

// ImageFormat is the picture format p's name says ("png", "jpeg", "gif",
// "webp"), "" for a name that is not a picture's.
func ImageFormat(p string) string { return imageFormats[ext(p)] }

// Image: *.png, *.jpg, *.jpeg, *.gif and *.webp.
func Image(p string) bool { return ImageFormat(p) != "" }

// Markdown: *.md, *.markdown, *.mdown and *.mkd.
func Markdown(p string) bool {
	switch ext(p) {
	case ".md", ".markdown", ".mdown", ".mkd":
		return true
	}
	return false
}

// CSV: *.csv and *.tsv.
func CSV(p string) bool {
	switch ext(p) {
	case ".csv", ".tsv":
		return true
	}
	return false
}

// Sheet: *.xlsx and *.xlsm (macros are never run: only cells are read).
func Sheet(p string) bool {
	switch ext(p) {
	case ".xlsx", ".xlsm":
		return true
	}
	return false
}

// Word: *.docx and *.docm.
func Word(p string) bool {
	switch ext(p) {
	case ".docx", ".docm":
		return true
	}
	return false
}

// binaryExt are names the text previewer leaves alone: formats that are
// never text, so a person sees "no previewer" rather than a refusal.
var binaryExt = map[string]bool{
	".png": true, ".jpg": true, ".jpeg": true, ".gif": true, ".webp": true, ".bmp": true, ".ico": true,
	".tif": true, ".tiff": true, ".heic": true, ".zip": true, ".gz": true, ".tgz": true, ".xz": true,
	".bz2": true, ".zst": true, ".7z": true, ".rar": true, ".pdf": true, ".xlsx": true, ".xls": true,
	".docx": true, ".doc": true, ".pptx": true, ".odt": true, ".ods": true, ".exe": true, ".dll": true,
	".so": true, ".dylib": true, ".o": true, ".a": true, ".class": true, ".jar": true, ".wasm": true,
	".mp3": true, ".mp4": true, ".mov": true, ".wav": true, ".flac": true, ".ogg": true, ".sqlite": true,
	".db": true, ".woff": true, ".woff2": true, ".ttf": true, ".otf": true,
}

// Text: any name but those of known binary formats.
func Text(p string) bool { return !binaryExt[ext(p)] }
