// Package config reads and writes $KULE_HOME/config.toml, the person's
// settings. Each subsystem keeps its settings in a section of its own (a type
// in a file of its own in this package), so the file stays one place to read.
package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/BurntSushi/toml"
	"github.com/kulehq/kule/kernel/internal/atomicfile"
)

// Config is the whole of config.toml.
type Config struct {
	// Sections are added as fields here, e.g. Sandbox SandboxConfig `toml:"sandbox"`.
	Sandbox SandboxConfig `toml:"sandbox"`
	Policy  PolicyConfig  `toml:"policy,omitempty"`
	Limits  LimitsConfig  `toml:"limits,omitempty"`
	// Graduation holds the thresholds of graduation (graduation.go).
	Graduation GraduationConfig `toml:"graduation,omitempty"`
	// Transports are the chat cockpits (transports.go).
	Transports []TransportConfig `toml:"transport,omitempty"`
}

// Path is config.toml inside the Kule home root.
func Path(root string) string { return filepath.Join(root, "config.toml") }

// Load reads config.toml; a missing file is the defaults. A file that does not
// parse is an error naming the file and line, and nothing is changed.
func Load(root string) (*Config, error) {
	var c Config
	p := Path(root)
	_, err := toml.DecodeFile(p, &c)
	if errors.Is(err, os.ErrNotExist) {
		return &c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config: %s: %w (fix or remove the file; nothing was changed)", p, err)
	}
	return &c, nil
}

// Save writes config.toml atomically, readable by its owner only.
func Save(root string, c *Config) error {
	err := atomicfile.WriteWith(Path(root), atomicfile.Options{Perm: 0o600}, func(w io.Writer) error {
		return toml.NewEncoder(w).Encode(c)
	})
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}
