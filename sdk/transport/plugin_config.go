package transport

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// ConfigEnv is the environment variable a built-in transport plugin reads
// its PluginConfig from. It holds placeholders, never tokens: the proxy
// the plugin reaches everything through puts each token in where it may
// go (see docs/transports.md).
const ConfigEnv = "KULE_TRANSPORT_PLUGIN"

// PluginConfig is what the host tells a transport plugin it starts.
type PluginConfig struct {
	Channel string `json:"channel"`
	API     string `json:"api,omitempty"` // the service's API address, when not its own
	// Bot and App are the tokens' placeholders (App: Slack's app-level
	// token); the proxy replaces them in requests to the service's hosts.
	Bot string `json:"bot"`
	App string `json:"app,omitempty"`
	// CA is the PEM of the proxy's run authority, which signs the
	// certificates of the hosts it looks into; the plugin trusts it
	// beside the system's roots.
	CA string `json:"ca,omitempty"`
}

// ErrPluginConfig: the plugin was started without a usable PluginConfig.
var ErrPluginConfig = errors.New("transport plugin configuration")

// PluginConfigFromEnv reads the PluginConfig of ConfigEnv.
func PluginConfigFromEnv() (PluginConfig, error) {
	raw := os.Getenv(ConfigEnv)
	if raw == "" {
		return PluginConfig{}, fmt.Errorf("%w: %s is not set (the plugin is started by kule, not by hand)", ErrPluginConfig, ConfigEnv)
	}
	return ParsePluginConfig(raw)
}

// ParsePluginConfig reads a PluginConfig from its JSON.
func ParsePluginConfig(raw string) (PluginConfig, error) {
	var c PluginConfig
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		return c, fmt.Errorf("%w: %v", ErrPluginConfig, err)
	}
	if c.Channel == "" || c.Bot == "" {
		return c, fmt.Errorf("%w: no channel or no bot token placeholder", ErrPluginConfig)
	}
	return c, nil
}
