package config

import (
	"path/filepath"
	"slices"
)

// SandboxConfig is the [sandbox] section: how commands are isolated.
type SandboxConfig struct {
	// AcceptWeaker lets commands run with the isolation that is available
	// when a part is missing (`kule isolation --accept-weaker on`); every
	// such run says what is missing.
	AcceptWeaker bool `toml:"accept_weaker"`
	// Devices are extra devices given to commands by name ("snd").
	Devices []string `toml:"devices,omitempty"`
	// NoGPU leaves the GPU's devices out.
	NoGPU bool `toml:"no_gpu,omitempty"`
	// Reveal maps a folder (absolute) to the projects beside it opened
	// read-only for its tasks (`kule reveal add`).
	Reveal map[string][]string `toml:"reveal,omitempty"`
}

// RevealsFor returns the paths revealed for folder's tasks.
func (c *SandboxConfig) RevealsFor(folder string) []string {
	return append([]string(nil), c.Reveal[filepath.Clean(folder)]...)
}

// AddReveal opens path (absolute) for folder's tasks; false if it already was.
func (c *SandboxConfig) AddReveal(folder, path string) bool {
	folder, path = filepath.Clean(folder), filepath.Clean(path)
	if slices.Contains(c.Reveal[folder], path) {
		return false
	}
	if c.Reveal == nil {
		c.Reveal = map[string][]string{}
	}
	c.Reveal[folder] = append(c.Reveal[folder], path)
	slices.Sort(c.Reveal[folder])
	return true
}

// RemoveReveal closes path again; false if it was not revealed.
func (c *SandboxConfig) RemoveReveal(folder, path string) bool {
	folder, path = filepath.Clean(folder), filepath.Clean(path)
	i := slices.Index(c.Reveal[folder], path)
	if i < 0 {
		return false
	}
	c.Reveal[folder] = slices.Delete(c.Reveal[folder], i, i+1)
	if len(c.Reveal[folder]) == 0 {
		delete(c.Reveal, folder)
	}
	return true
}
