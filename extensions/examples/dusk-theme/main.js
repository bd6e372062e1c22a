// A theme needs no script; the manifest and the theme file are the whole
// extension.
