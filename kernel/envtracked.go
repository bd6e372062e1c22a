package kernel

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/kulehq/kule/kernel/internal/dotenv"
	"github.com/kulehq/kule/kernel/internal/gitstate"
	"github.com/kulehq/kule/kernel/internal/manifest"
)

// EnvTrackedNote is what Kule says of a settings file git tracks: masking
// the copy's file hides nothing, since `git show HEAD:.env` in the copy
// prints what the repository holds, and Kule cannot rewrite history.
func EnvTrackedNote(rel string) string {
	return "`" + rel + "` is tracked by git: its values are in the repository the agent can read (git show HEAD:" + rel + "); Kule masks the file but cannot take them out of history — move the secrets out of the repository (and change them)"
}

// envTracked lists the settings files (.env and the like, as
// kernel/internal/dotenv names them) that the git repository at the top of folder
// holds in its index or in the tree of HEAD: their values are readable in
// the copy's .git whatever the copy's file says. A folder that is not a
// repository, or a .git that is a link or a file pointing elsewhere (which
// the copy cannot read through), holds none. It never runs git: gitstate
// reads the repository's files.
func envTracked(folder string) ([]string, error) {
	gitDir := filepath.Join(folder, ".git")
	fi, err := os.Lstat(gitDir)
	if errors.Is(err, os.ErrNotExist) || err == nil && !fi.IsDir() {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return gitstate.Tracked(gitDir, dotenv.IsDotenv)
}

// hasDotenv reports whether the folder holds a settings file at all: a
// repository Kule cannot read is worth a note only then.
func hasDotenv(m *manifest.Manifest) bool {
	for _, e := range m.Entries {
		if dotenv.IsDotenv(e.Path) {
			return true
		}
	}
	return false
}
