package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kulehq/kule/kernel/internal/lazyre"
)

// TransportConfig is one chat cockpit, a [[transport]] table of
// config.toml. Its tokens are kept secrets (kule secrets), named here, never
// held in this file.
type TransportConfig struct {
	Name      string   `toml:"name"`      // "slack", "discord", or an installed transport plugin's name
	Channel   string   `toml:"channel"`   // the channel id tasks are launched in
	Operators []string `toml:"operators"` // chat user ids that may launch, answer, commit, roll back, kill
	Folder    string   `toml:"folder,omitempty"`
	Agent     string   `toml:"agent,omitempty"`
	// BotSecret and AppSecret name the kept secrets of the bot token and
	// (Slack only) the app-level token.
	BotSecret string `toml:"bot_secret"`
	AppSecret string `toml:"app_secret,omitempty"`
	// API replaces the service's API address (a local stand-in in tests).
	API string `toml:"api,omitempty"`
}

// TransportSecretPrefix starts the names of the transports' kept secrets.
// A secret of that name is never handed to a task's proxy (the daemon alone
// uses it), so the tokens must be named so.
const TransportSecretPrefix = "KULE_TRANSPORT_"

// IsTransportSecret reports whether the kept secret name is a transport's.
func IsTransportSecret(name string) bool { return strings.HasPrefix(name, TransportSecretPrefix) }

// TransportNames are the transports built into Kule. Any other name is an
// installed transport plugin's (kule plugins install), which the daemon
// starts only while it is approved.
var TransportNames = []string{"slack", "discord"}

// Sentinel errors.
var (
	ErrTransport = errors.New("transport settings are incomplete")
)

var (
	chatID = lazyre.New(`^[A-Za-z0-9_-]{1,64}$`)
	// pluginName is the shape of an installed plugin's name (pluginhost's).
	pluginName = lazyre.New(`^[a-z0-9][a-z0-9_-]{0,63}$`)
)

// Check says what is missing or wrong in c.
func (c TransportConfig) Check() error {
	if !slices.Contains(TransportNames, c.Name) && !pluginName.MatchString(c.Name) {
		return fmt.Errorf("%w: no transport %q (built in: %v; or an installed transport plugin's name)", ErrTransport, c.Name, TransportNames)
	}
	if !chatID.MatchString(c.Channel) {
		return fmt.Errorf("%w: %s: the channel must be the chat's channel id (letters, digits), got %q", ErrTransport, c.Name, c.Channel)
	}
	if len(c.Operators) == 0 {
		return fmt.Errorf("%w: %s: name at least one operator (a chat user id): nobody could approve", ErrTransport, c.Name)
	}
	for _, o := range c.Operators {
		if !chatID.MatchString(o) {
			return fmt.Errorf("%w: %s: operator %q is not a chat user id", ErrTransport, c.Name, o)
		}
	}
	if c.BotSecret == "" || (c.Name == "slack" && c.AppSecret == "") {
		return fmt.Errorf("%w: %s: its tokens must be named kept secrets", ErrTransport, c.Name)
	}
	for _, n := range []string{c.BotSecret, c.AppSecret} {
		if n != "" && !IsTransportSecret(n) {
			return fmt.Errorf("%w: %s: the kept secret %q must be named %s… so that no task's proxy is handed it", ErrTransport, c.Name, n, TransportSecretPrefix)
		}
	}
	return nil
}

// Transport returns the settings of the transport name.
func (c *Config) Transport(name string) (TransportConfig, bool) {
	for _, t := range c.Transports {
		if t.Name == name {
			return t, true
		}
	}
	return TransportConfig{}, false
}

// SetTransport adds t or replaces the transport of its name.
func (c *Config) SetTransport(t TransportConfig) {
	for i := range c.Transports {
		if c.Transports[i].Name == t.Name {
			c.Transports[i] = t
			return
		}
	}
	c.Transports = append(c.Transports, t)
}

// RemoveTransport removes the transport name; false if there was none.
func (c *Config) RemoveTransport(name string) bool {
	n := len(c.Transports)
	c.Transports = slices.DeleteFunc(c.Transports, func(t TransportConfig) bool { return t.Name == name })
	return len(c.Transports) != n
}
