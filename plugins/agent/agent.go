// Package agent holds the agent profiles that ship with Kule (Claude Code,
// Codex, Gemini CLI) as TOML files, and a copy of the ACP agent registry.
// kernel/internal/agents reads them; nothing here runs.
package agent

import "embed"

// Builtins holds one <name>.toml profile per built-in agent.
//
//go:embed *.toml
var Builtins embed.FS

// Registry is the ACP registry copy (registry/registry.json), and
// RegistryLicense its licence (Apache-2.0).
var (
	//go:embed registry/registry.json
	Registry []byte
	//go:embed registry/LICENSE
	RegistryLicense []byte
)
