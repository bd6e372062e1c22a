package agents

import (
	"fmt"
	"path"
	"strings"
)

// commandGuard is on everywhere but in the test that shows what a wrapped
// command would fetch past the exact-version check.
var commandGuard = true

// launchers run the command that follows them (as it is, as another user,
// or from a string): what they run is what a profile must name itself.
var launchers = map[string]string{
	"env": "set variables in the profile's env (where Kule checks them)", "nice": "", "nohup": "",
	"setsid": "", "stdbuf": "", "timeout": "", "time": "", "command": "", "exec": "", "builtin": "",
	"ionice": "", "chrt": "", "taskset": "", "unbuffer": "", "caffeinate": "", "systemd-run": "",
	"sudo": "", "doas": "", "su": "", "pkexec": "", "runuser": "", "setpriv": "", "chroot": "",
	"xargs": "", "watch": "", "script": "", "flock": "", "parallel": "", "busybox": "",
	"nix-shell": "", "direnv": "", "strace": "", "ltrace": "", "gdb": "", "valgrind": "",
	"firejail": "", "bwrap": "", "unshare": "", "nsenter": "", "faketime": "", "proxychains": "",
	"proxychains4": "", "torsocks": "", "mise": "", "asdf": "", "rtx": "", "corepack": "",
	"scl": "", "conda": "", "mamba": "", "micromamba": "", "pixi": "", "poetry": "", "pdm": "",
	"hatch": "", "rye": "", "bundle": "", "npm-run": "",
}

// shells take a command string with -c (or read one from stdin with -s).
var shells = map[string]bool{
	"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true, "ash": true,
	"fish": true, "csh": true, "tcsh": true, "yash": true, "rc": true, "es": true, "nu": true,
	"xonsh": true, "elvish": true, "pwsh": true, "powershell": true, "cmd": true,
}

// evalFlags are the options with which an interpreter runs code given on
// its command line.
var evalFlags = map[string][]string{
	"node": {"-e", "--eval", "-p", "--print"}, "nodejs": {"-e", "--eval", "-p", "--print"},
	"bun": {"-e", "--eval", "-p", "--print"}, "deno": {"eval"},
	"python": {"-c"}, "python3": {"-c"}, "python2": {"-c"}, "pypy": {"-c"}, "pypy3": {"-c"},
	"perl": {"-e", "-E"}, "ruby": {"-e"}, "php": {"-r"}, "lua": {"-e"}, "luajit": {"-e"},
	"osascript": {"-e"}, "awk": {}, "gawk": {}, "mawk": {},
}

// programName is how a command line names its program: the last element of
// its path, without a Windows suffix.
func programName(arg string) string {
	b := path.Base(strings.ReplaceAll(arg, `\`, "/"))
	for _, s := range []string{".exe", ".cmd", ".bat", ".ps1"} {
		if strings.HasSuffix(strings.ToLower(b), s) {
			b = b[:len(b)-len(s)]
		}
	}
	return b
}

// checkCommand refuses a command whose program is not the agent itself: a
// launcher or a shell wrapping another command, code given on an
// interpreter's command line, and every way of fetching a package but the
// one Kule checks and installs itself (npx or uvx with one exact version).
// What it lets through runs the program it names.
func checkCommand(cmd []string) error {
	if !commandGuard || len(cmd) == 0 {
		return nil
	}
	prog := programName(cmd[0])
	args := cmd[1:]
	if how, ok := launchers[prog]; ok {
		if how == "" {
			how = "name the agent's program and its arguments as the command itself"
		}
		return fmt.Errorf("%q runs another command (%s); Kule checks what a command runs only when it is named directly: %s", prog, strings.Join(args, " "), how)
	}
	if shells[prog] {
		for _, a := range args {
			if shellStringFlag(prog, a) {
				return fmt.Errorf("%s %s runs a command string, which Kule cannot check; name the agent's program and its arguments as the command", prog, a)
			}
		}
	}
	if flags, ok := evalFlags[prog]; ok {
		if len(flags) == 0 && len(args) > 0 {
			return fmt.Errorf("%s runs a program given on its command line, which Kule cannot check; name the agent's program as the command", prog)
		}
		for _, a := range args {
			for _, f := range flags {
				if a == f || strings.HasPrefix(a, f+"=") || len(f) == 2 && strings.HasPrefix(a, f) && !strings.HasPrefix(a, "--") {
					return fmt.Errorf("%s %s runs code given on its command line, which Kule cannot check; name the agent's program as the command", prog, f)
				}
			}
		}
	}
	sub, rest := "", []string(nil)
	if len(args) > 0 {
		sub, rest = args[0], args[1:]
	}
	exactly := "use npx with one exact version instead (npx -y PACKAGE@1.2.3, or uvx PACKAGE==1.2.3): Kule checks that version and installs it once, without its install scripts"
	fetches := func() error {
		return fmt.Errorf("%s %s fetches and runs a package Kule does not pin; %s", prog, sub, exactly)
	}
	switch prog {
	case "npm":
		switch sub {
		case "exec", "x", "init", "create", "innit":
			return fetches()
		}
	case "pnpm", "yarn", "bun":
		switch sub {
		case "dlx", "x", "create":
			return fetches()
		}
	case "deno":
		if sub == "x" || remoteSpec(rest) {
			return fetches()
		}
	case "dx", "dnx":
		return fetches()
	case "gem":
		if sub == "exec" {
			return fetches()
		}
	case "pipx":
		if sub == "run" {
			return fetches()
		}
	case "nix":
		switch sub {
		case "run", "shell", "develop":
			return fetches()
		}
	case "dotnet":
		if sub == "dnx" || sub == "tool" && len(args) > 1 && (args[1] == "exec" || args[1] == "execute") {
			return fetches()
		}
	case "uv":
		switch sub {
		case "tool", "x":
			return fetches()
		case "run":
			for _, a := range rest {
				if strings.HasPrefix(a, "--with") || a == "--script" || strings.HasPrefix(a, "--from") || strings.HasPrefix(a, "http:") || strings.HasPrefix(a, "https:") {
					return fmt.Errorf("uv run %s fetches packages Kule does not pin; %s", a, exactly)
				}
			}
		}
	case "go":
		if sub == "run" {
			for _, a := range rest {
				if strings.HasPrefix(a, "-") {
					continue
				}
				if mod, ver, ok := strings.Cut(a, "@"); ok && (!exactRE.MatchString(ver) || mod == "") {
					return fmt.Errorf("go run %s: %q is not one exact version (no latest, branches or ranges)", a, ver)
				}
				break
			}
		}
	}
	return nil
}

// shellStringFlag reports whether a shell's option makes it run a command
// string: -c (alone or in a cluster such as -lc or -ec), -s, /c for cmd,
// -Command and -EncodedCommand for PowerShell.
func shellStringFlag(shell, a string) bool {
	la := strings.ToLower(a)
	switch shell {
	case "cmd":
		return la == "/c" || la == "/k" || strings.HasPrefix(la, "/c") || strings.HasPrefix(la, "/k")
	case "pwsh", "powershell":
		return strings.HasPrefix(la, "-c") || strings.HasPrefix(la, "-e") || strings.HasPrefix(la, "/c") || strings.HasPrefix(la, "/e")
	}
	if a == "--command" || a == "--init-command" || strings.HasPrefix(a, "--command=") || strings.HasPrefix(a, "--init-command=") {
		return true
	}
	if len(a) < 2 || a[0] != '-' && a[0] != '+' || strings.HasPrefix(a, "--") {
		return false
	}
	return strings.ContainsAny(a[1:], "cs")
}

// remoteSpec reports whether deno is told to run something it fetches: an
// npm:, jsr: or URL specifier.
func remoteSpec(args []string) bool {
	for _, a := range args {
		for _, p := range []string{"npm:", "jsr:", "http:", "https:"} {
			if strings.HasPrefix(a, p) {
				return true
			}
		}
	}
	return false
}
