// Package credentials names where a person keeps keys, tokens and logins
// under their home. It is the one list the sandbox hides from every
// command, agent profiles are refused for opening, and a task's home layer
// leaves out.
package credentials

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Home are the paths under the home (slash-separated, relative) that hold
// the person's keys, tokens, logins, password stores and browser profiles.
// A folder here is hidden whole: what else it holds (a tool's cache, its
// plugins) is not worth the key beside it.
var Home = []string{
	// Keys and agents.
	".ssh", ".gnupg", ".password-store", ".local/share/keyrings", ".local/share/kwalletd",
	".pki", ".Xauthority", ".ICEauthority", ".config/sops", ".config/age",
	// Git hosts and git's own store.
	".netrc", ".git-credentials", ".config/git/credentials", ".config/gh", ".config/hub",
	".config/glab-cli", ".config/github-copilot",
	// Clouds and clusters.
	".aws", ".azure", ".config/gcloud", ".oci", ".kube", ".docker", ".config/containers/auth.json",
	".terraform.d", ".terraformrc", ".vault-token", ".config/doctl", ".config/hcloud",
	".s3cfg", ".boto", ".config/rclone", ".fly", ".config/netlify", ".config/stripe",
	".config/configstore",
	// Package registries.
	".npmrc", ".yarnrc.yml", ".pypirc", ".config/pip/pip.conf", ".pip/pip.conf",
	".cargo/credentials", ".cargo/credentials.toml", ".gem/credentials",
	".m2/settings.xml", ".m2/settings-security.xml", ".gradle/gradle.properties",
	".nuget/NuGet/NuGet.Config", ".config/NuGet/NuGet.Config",
	".composer/auth.json", ".config/composer/auth.json",
	// Databases.
	".pgpass", ".my.cnf", ".mylogin.cnf",
	// Password managers.
	".config/op", ".op", ".config/Bitwarden", ".config/Bitwarden CLI", ".config/1Password",
	".config/KeePassXC",
	// Browsers and mail: cookies and saved passwords.
	".mozilla", ".thunderbird", ".config/google-chrome", ".config/chromium",
	".config/BraveSoftware", ".config/microsoft-edge", ".config/vivaldi", ".config/opera",
}

// AgentLogins are the logins of the agents Kule knows, under the home. Each
// is hidden from every command but that agent's own runs, which open their
// login by its exact path.
var AgentLogins = []string{
	".claude/.credentials.json", ".codex/auth.json",
	".gemini/oauth_creds.json", ".gemini/google_accounts.json",
}

// AgentHomes is where Kule keeps the homes of agents that get one of their
// own (each holds that agent's login), for the person whose home is home,
// with dataHome the value of XDG_DATA_HOME ("" when unset).
// A home under /tmp (which the sandbox replaces with each task's own) has
// them in /var/tmp/kule-UID instead, as the agents' packages are.
func AgentHomes(home, dataHome string) string {
	dir := filepath.Join(home, ".local", "share", "kule", "agent-homes")
	if dataHome != "" && filepath.IsAbs(dataHome) {
		dir = filepath.Join(dataHome, "kule", "agent-homes")
	}
	if dir == "/tmp" || strings.HasPrefix(dir, "/tmp/") {
		return filepath.Join("/var/tmp", fmt.Sprintf("kule-%d", os.Getuid()), "agent-homes")
	}
	return dir
}

// Holds reports whether rel (slash-separated, relative to the home) is one
// of Home or lies inside one, and which.
func Holds(rel string) (string, bool) {
	rel = path.Clean(rel)
	for _, h := range Home {
		if rel == h || strings.HasPrefix(rel, h+"/") {
			return h, true
		}
	}
	return "", false
}
