package kernel

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/kulehq/kule/kernel/internal/beneath"
	"github.com/kulehq/kule/kernel/internal/dotenv"
	"github.com/kulehq/kule/kernel/internal/effects"
	"github.com/kulehq/kule/kernel/internal/manifest"
	"github.com/kulehq/kule/kernel/internal/scan"
	"github.com/kulehq/kule/kernel/internal/secrets"
	"github.com/kulehq/kule/kernel/internal/task"
	"github.com/kulehq/kule/kernel/internal/walk"
)

// This file is where the kernel meets kernel/internal/dotenv: the copy's settings
// files (.env, .env.local, *.env, .envrc; not .env.example) hold
// placeholders where the folder holds values that look secret. The folder
// and the base keep the real values; the task keeps what it masked in its
// sealed secrets.json; a commit writes the real values back.
//
//   - when a task is made, after each commit, rollback and undo, and before
//     every command (MaskEnv): the copy's settings files are masked, and where
//     the copy then means what the base holds, the stat cache records the
//     masked file, so a masked file is never an effect;
//   - at commit, a settings file's content is read from the copy with its
//     placeholders replaced by the real values (envVault.unmask).

// ErrMaskFailed: the copy's settings files could not be masked.
var ErrMaskFailed = fmt.Errorf("the copy's .env files could not be masked")

// envVault is a task's secrets.json, opened the first time it is needed (the
// sealer may be the Secret Service: a task without secrets never asks it).
type envVault struct {
	k     *Kernel
	t     *task.Task
	v     *dotenv.Vault
	s     secrets.Sealer
	err   error
	tried bool
}

func (k *Kernel) envVault(t *task.Task) *envVault { return &envVault{k: k, t: t} }

func (ev *envVault) open() (*dotenv.Vault, error) {
	if !ev.tried {
		ev.tried = true
		ev.s, ev.err = secrets.OpenSealer(ev.k.store.Root, os.Getenv("KULE_SECRETS_KEYFILE") == "1")
		if ev.err == nil {
			ev.v, ev.err = dotenv.LoadVault(dotenv.VaultPath(ev.t.Paths.Dir), ev.s)
		}
		if ev.err != nil {
			ev.err = fmt.Errorf("the task's secrets.json: %w", ev.err)
		}
	}
	return ev.v, ev.err
}

func (ev *envVault) save() error {
	return ev.v.Save(dotenv.VaultPath(ev.t.Paths.Dir), ev.s)
}

// unmask gives a settings file's content with the real values in place of
// its placeholders; other files are returned as they are.
func (ev *envVault) unmask(rel string, b []byte) ([]byte, error) {
	if !dotenv.IsDotenv(rel) || !dotenv.HasPlaceholder(b) {
		return b, nil
	}
	v, err := ev.open()
	if err != nil {
		return nil, err
	}
	nb, _ := v.Unmask(rel, b)
	return nb, nil
}

// readCopy reads a file of the copy (never through a link) as a commit
// applies it: unmasked.
func (ev *envVault) readCopy(rel string) ([]byte, error) {
	root, err := beneath.Open(ev.t.Paths.Copy)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	b, err := root.ReadFile(rel)
	if err != nil {
		return nil, err
	}
	return ev.unmask(rel, b)
}

// maxSettingsFile is the largest settings file masked (a .env is small).
const maxSettingsFile = 8 << 20

// isSettingsFile is a settings file the masking looks at: a dotenv name,
// outside any .git and node_modules.
func isSettingsFile(rel string) bool {
	if !dotenv.IsDotenv(rel) || scan.IsGitPath(rel) {
		return false
	}
	return !strings.HasPrefix(rel, "node_modules/") && !strings.Contains(rel, "/node_modules/")
}

// MaskEnv masks the secret-looking values of the task's settings files in
// its copy and returns the paths it changed. The exec path calls it before
// every command and an agent run before it starts; it takes the task's lock,
// so call it without holding it.
func (k *Kernel) MaskEnv(t *task.Task) ([]string, error) {
	l, err := k.lock(t)
	if err != nil {
		return nil, err
	}
	defer l.Unlock()
	return k.maskEnv(t)
}

// maskEnv is MaskEnv under the task's lock. The settings files are the ones
// the base knows of (the folder's), plus those masked before.
func (k *Kernel) maskEnv(t *task.Task) ([]string, error) {
	sb, err := openSettingsBase(manifestPath(t.Paths))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMaskFailed, err)
	}
	defer sb.close()
	cands, err := sb.settingsFiles()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMaskFailed, err)
	}
	// What the stat cache takes of the copy's masked files, saved once.
	cached := map[string]walk.Item{}
	type job struct {
		rel    string
		masked []byte
		it     walk.Item
	}
	var jobs []job
	ev := k.envVault(t)
	// The copy is opened beneath its root: where a command replaced a
	// directory by a link (config -> ~/projects/sibling), config/.env is
	// not the copy's and is neither read nor rewritten.
	root, err := beneath.Open(t.Paths.Copy)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMaskFailed, err)
	}
	defer root.Close()
	for _, rel := range cands {
		it, err := lstatBeneath(root, rel)
		if err != nil || it.Type != effects.TypeFile {
			continue // gone, replaced, or behind a link in the copy: nothing of the folder's to mask there
		}
		b, err := readBeneath(root, rel, maxSettingsFile)
		if err != nil {
			return nil, fmt.Errorf("%w: read %s: %v", ErrMaskFailed, effects.Quote(rel), err)
		}
		if !dotenv.NeedsMask(b) {
			// Masked already. A command that rewrote it unchanged moved
			// its metadata: where it still means what the base holds, the
			// stat cache takes it again, so it is no effect.
			if e, ok, err := sb.get(rel); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrMaskFailed, err)
			} else if ok && e.Item != it && dotenv.HasPlaceholder(b) {
				if real, err := ev.unmask(rel, b); err == nil && baseHolds(baseOf(t), e, real) {
					cached[rel] = it
				}
			}
			continue
		}
		v, err := ev.open()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrMaskFailed, err)
		}
		nb, _ := v.MaskBytes(rel, b)
		jobs = append(jobs, job{rel, nb, it})
	}
	if len(jobs) == 0 {
		if err := sb.save(cached); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrMaskFailed, err)
		}
		return nil, nil
	}
	if err := forgetFolds(t); err != nil { // the copy is written below
		return nil, fmt.Errorf("%w: %v (the copy is unchanged)", ErrMaskFailed, err)
	}
	// The real values are sealed away before any of them leaves the copy.
	if err := ev.save(); err != nil {
		return nil, fmt.Errorf("%w: %v (the copy is unchanged)", ErrMaskFailed, err)
	}
	base := baseOf(t)
	var changed []string
	for _, j := range jobs {
		if err := root.WriteFile(j.rel, j.masked, os.FileMode(j.it.Mode&0o777)); err != nil {
			if errors.Is(err, beneath.ErrLink) {
				return changed, fmt.Errorf("%w: %s: a command put a symbolic link on its way, so nothing was written and nothing outside the copy was touched — remove the link in the copy or run `kule rollback %s`: %v", ErrMaskFailed, effects.Quote(j.rel), t.ID, err)
			}
			return changed, fmt.Errorf("%w: %s: %v", ErrMaskFailed, effects.Quote(j.rel), err)
		}
		// Keep the time: a build that watches .env does not run again.
		mt := unix.NsecToTimespec(j.it.MTime)
		_ = root.Utimes(j.rel, mt, mt)
		changed = append(changed, j.rel)
		// Where the copy now means what the base holds, the stat cache
		// takes the masked file: it is no effect, and status skips it.
		e, ok, err := sb.get(j.rel)
		if err != nil || !ok {
			continue
		}
		real, err := ev.unmask(j.rel, j.masked)
		if err != nil || !baseHolds(base, e, real) {
			continue
		}
		if it, err := lstatBeneath(root, j.rel); err == nil && it.Type == effects.TypeFile {
			cached[j.rel] = it
		}
	}
	if err := sb.save(cached); err != nil {
		return changed, fmt.Errorf("%w: %v", ErrMaskFailed, err)
	}
	return changed, nil
}

// settingsBase is what maskEnv reads of the base: its settings files and
// their entries, through the manifest's index where it has one (masking
// runs before every command, and a million-entry manifest is not decoded
// for the few .env files among it), the whole manifest only to save it.
type settingsBase struct {
	path string
	x    *manifest.Indexed  // nil: no index, m holds the whole
	m    *manifest.Manifest // loaded once needed
}

func openSettingsBase(path string) (*settingsBase, error) {
	sb := &settingsBase{path: path}
	x, err := manifest.OpenIndexed(path)
	if err == nil {
		sb.x = x
		return sb, nil
	}
	if !errors.Is(err, manifest.ErrNoIndex) {
		return nil, err
	}
	if sb.m, err = manifest.Load(path); err != nil {
		return nil, err
	}
	return sb, nil
}

func (sb *settingsBase) close() {
	if sb.x != nil {
		sb.x.Close()
	}
}

// settingsFiles are the files of the base that isSettingsFile picks.
func (sb *settingsBase) settingsFiles() ([]string, error) {
	var out []string
	if sb.x == nil {
		for _, e := range sb.m.Entries {
			if e.Type == effects.TypeFile && isSettingsFile(e.Path) {
				out = append(out, e.Path)
			}
		}
		return out, nil
	}
	for _, p := range sb.x.Named() {
		if !isSettingsFile(p) {
			continue
		}
		e, ok, err := sb.x.Get(p)
		if err != nil {
			return nil, err
		}
		if ok && e.Type == effects.TypeFile {
			out = append(out, p)
		}
	}
	return out, nil
}

func (sb *settingsBase) get(rel string) (*manifest.Entry, bool, error) {
	if sb.x != nil {
		return sb.x.Get(rel)
	}
	e, ok := sb.m.Get(rel)
	return e, ok, nil
}

// save records the copy's metadata at the given paths in the base's stat
// cache, if there are any.
func (sb *settingsBase) save(cached map[string]walk.Item) error {
	if len(cached) == 0 {
		return nil
	}
	if sb.m == nil {
		m, err := manifest.Load(sb.path)
		if err != nil {
			return err
		}
		sb.m = m
	}
	for rel, it := range cached {
		if e, ok := sb.m.Get(rel); ok {
			e.Item = it
		}
	}
	return manifest.Save(sb.path, sb.m)
}

// baseHolds reports whether the base keeps exactly b for entry e.
func baseHolds(base interface {
	Open(*manifest.Entry) (io.ReadCloser, error)
}, e *manifest.Entry, b []byte) bool {
	if e.HasHash() {
		return sha256.Sum256(b) == e.Hash
	}
	r, err := base.Open(e)
	if err != nil {
		return false
	}
	defer r.Close()
	old, err := io.ReadAll(r)
	return err == nil && bytes.Equal(old, b)
}

// lstatBeneath describes rel in the copy without following a link on the
// way; a missing rel is an Item of no type, as walk.Lstat gives.
func lstatBeneath(root *beneath.Root, rel string) (walk.Item, error) {
	st, err := root.Lstat(rel)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return walk.Item{Path: rel}, nil
	}
	if err != nil {
		return walk.Item{}, err
	}
	return walk.FromStat(rel, &st), nil
}

// readBeneath reads the regular file rel of root, up to max bytes.
func readBeneath(root *beneath.Root, rel string, max int64) ([]byte, error) {
	f, err := root.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readRegular(f, max)
}
