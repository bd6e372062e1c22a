package agents

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/kulehq/kule/kernel/internal/atomicfile"
	"github.com/kulehq/kule/kernel/internal/proxy"
)

// ErrSetting: a setting of `kule agents set` is refused.
var ErrSetting = errors.New("agents: setting refused")

// Setting is what a person changed of a profile without copying it
// (`kule agents set NAME base_url=URL`), kept in $KULE_HOME/agent-settings.toml.
type Setting struct {
	// BaseURL points the agent at another endpoint: a local model (Ollama,
	// LM Studio, vLLM), a LiteLLM or company gateway. It goes into the
	// profile's endpoint_env variable; the profile's keys then go to that
	// endpoint alone, and its host:port is the profile's model host.
	BaseURL string `toml:"base_url,omitempty"`
}

// SettingsPath is $KULE_HOME/agent-settings.toml.
func SettingsPath(kuleHome string) string { return filepath.Join(kuleHome, "agent-settings.toml") }

// ReadSettings reads agent-settings.toml (missing: none). Unknown keys are
// refused, as in agents.toml.
func ReadSettings(kuleHome string) (map[string]Setting, error) {
	path := SettingsPath(kuleHome)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]Setting{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("agents: %w", err)
	}
	m := map[string]Setting{}
	md, err := toml.Decode(string(b), &m)
	if err != nil {
		return nil, fmt.Errorf("agents: %s: %w", path, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return nil, fmt.Errorf("%w: %s: unknown key %s (an agent's table takes base_url)", ErrSetting, path, und[0])
	}
	return m, nil
}

// EndpointOf reads a base URL as the endpoint it names: host:port, the port
// the scheme's when none is written. Plain http is taken only for this
// machine's loopback: a key never crosses a network in the clear.
func EndpointOf(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return "", fmt.Errorf("%w: base_url %q is not a URL (write http://localhost:4000 or https://llm.example.com/v1)", ErrSetting, raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%w: base_url %q: no user, query or fragment (a key goes in through the profile's keys)", ErrSetting, raw)
	}
	port := u.Port()
	switch u.Scheme {
	case "https":
		if port == "" {
			port = "443"
		}
	case "http":
		if !proxy.LoopbackName(u.Hostname()) {
			return "", fmt.Errorf("%w: base_url %q: plain http only to this machine's loopback (localhost, 127.0.0.1, ::1), since keys would cross the network in the clear; use https", ErrSetting, raw)
		}
		if port == "" {
			port = "80"
		}
	default:
		return "", fmt.Errorf("%w: base_url %q: the scheme must be http or https", ErrSetting, raw)
	}
	hp := net.JoinHostPort(strings.ToLower(u.Hostname()), port)
	if _, _, ok := Endpoint(hp); !ok {
		return "", fmt.Errorf("%w: base_url %q does not name a host and port Kule can open", ErrSetting, raw)
	}
	return hp, nil
}

// applySetting changes p as s says; the profile's Source then names the
// settings file too, and Setting says what was set.
func applySetting(p Profile, s Setting, kuleHome string) (Profile, error) {
	if s.BaseURL == "" {
		return p, nil
	}
	if p.EndpointEnv == "" {
		return p, fmt.Errorf("%w: %s takes no base_url: its profile names no endpoint_env (the variable that points it at another endpoint)", ErrSetting, p.Name)
	}
	ep, err := EndpointOf(s.BaseURL)
	if err != nil {
		return p, err
	}
	old := map[string]bool{}
	keys := make(map[string][]string, len(p.Keys))
	for k, hosts := range p.Keys {
		for _, h := range hosts {
			old[h] = true
		}
		keys[k] = []string{ep}
	}
	var hosts []string
	for _, h := range p.Hosts {
		if !old[h] {
			hosts = append(hosts, h)
		}
	}
	if !slices.Contains(hosts, ep) {
		hosts = append(hosts, ep)
	}
	env := make(map[string]string, len(p.Env)+1)
	for k, v := range p.Env {
		env[k] = v
	}
	env[p.EndpointEnv] = s.BaseURL
	if p.EndpointKey != "" {
		b, err := json.Marshal(map[string]string{p.EndpointKey: s.BaseURL})
		if err != nil {
			return p, fmt.Errorf("%w: %v", ErrSetting, err)
		}
		env[p.EndpointEnv] = string(b)
	}
	orig := p
	p.Keys, p.Hosts, p.Env = keys, hosts, env
	p.unset = &orig
	p.Source += " with " + SettingsPath(kuleHome)
	p.Setting = "base_url=" + s.BaseURL
	return p, nil
}

// SetSetting changes one setting of the profile called name (a built-in or the
// person's) in agent-settings.toml; an empty value takes it back. The
// profile it makes is checked as Load checks it, and returned.
func SetSetting(kuleHome string, set *Set, name, key, value string) (Profile, error) {
	if key != "base_url" {
		return Profile{}, fmt.Errorf("%w: %q is not a setting (kule agents set NAME base_url=URL)", ErrSetting, key)
	}
	var base *Profile
	for i := range set.Profiles {
		if set.Profiles[i].Name == name {
			base = &set.Profiles[i]
		}
	}
	if base == nil {
		_, err := set.Get(name)
		return Profile{}, err
	}
	all, err := ReadSettings(kuleHome)
	if err != nil {
		return Profile{}, err
	}
	plain := *base
	if plain.unset != nil {
		plain = *plain.unset
	}
	s := all[name]
	s.BaseURL = value
	p, err := applySetting(plain, s, kuleHome)
	if err != nil {
		return Profile{}, err
	}
	if err := Validate(p, set.Profiles); err != nil {
		return Profile{}, err
	}
	if s == (Setting{}) {
		delete(all, name)
	} else {
		all[name] = s
	}
	if err := writeSettings(kuleHome, all); err != nil {
		return Profile{}, err
	}
	return p, nil
}

func writeSettings(kuleHome string, all map[string]Setting) error {
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	var b bytes.Buffer
	b.WriteString("# What `kule agents set` changed of an agent's profile, without copying it.\n")
	for _, n := range names {
		fmt.Fprintf(&b, "\n[%s]\nbase_url = %s\n", strconv.Quote(n), strconv.Quote(all[n].BaseURL))
	}
	if err := os.MkdirAll(kuleHome, 0o700); err != nil {
		return fmt.Errorf("agents: %w", err)
	}
	if err := atomicfile.Write(SettingsPath(kuleHome), b.Bytes(), 0o600); err != nil {
		return fmt.Errorf("agents: write %s: %w; it is as it was", SettingsPath(kuleHome), err)
	}
	return nil
}
