package policy

import (
	"bufio"
	"bytes"
	_ "embed"
	"sort"
	"strings"
)

// Tags a path or host may carry; the rules read them as resource.tags.
const (
	TagManifest          = "manifest"
	TagLockfile          = "lockfile"
	TagCI                = "ci"
	TagEditorConfig      = "editor_config"
	TagRunsCode          = "runs_code"
	TagAgentInstructions = "agent_instructions"
	TagNestedRepo        = "nested_repo"
	TagLink              = "link"
	TagGitHook           = "git_hook"
	TagGitConfig         = "git_config"
	TagGitDir            = "git_dir"
	TagKuleSettings      = "kule_settings"
	TagPackageRegistry   = "package_registry"
	TagModelAPI          = "model_api"
)

// tagMask holds a set of tags as bits, in the order of tagNames.
type tagMask uint32

var tagNames = []string{
	TagManifest, TagLockfile, TagCI, TagEditorConfig, TagRunsCode,
	TagAgentInstructions, TagNestedRepo, TagLink, TagGitHook, TagGitConfig,
	TagGitDir, TagKuleSettings, TagPackageRegistry, TagModelAPI,
}

func tagBit(name string) tagMask {
	for i, n := range tagNames {
		if n == name {
			return 1 << i
		}
	}
	panic("policy: unknown tag " + name)
}

var (
	bManifest     = tagBit(TagManifest)
	bLockfile     = tagBit(TagLockfile)
	bCI           = tagBit(TagCI)
	bEditor       = tagBit(TagEditorConfig)
	bRunsCode     = tagBit(TagRunsCode)
	bAgent        = tagBit(TagAgentInstructions)
	bNestedRepo   = tagBit(TagNestedRepo)
	bLink         = tagBit(TagLink)
	bGitHook      = tagBit(TagGitHook)
	bGitConfig    = tagBit(TagGitConfig)
	bGitDir       = tagBit(TagGitDir)
	bKuleSettings = tagBit(TagKuleSettings)
	bModelAPI     = tagBit(TagModelAPI)
)

// Names returns the tags of m in a stable order.
func (m tagMask) Names() []string {
	var out []string
	for i, n := range tagNames {
		if m&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// Names of files, lower-cased, that carry a tag wherever they are.
var nameTags = map[string]tagMask{}

// Names of directories, lower-cased, whose whole subtree carries a tag.
var dirTags = map[string]tagMask{}

// Two-component paths (parent/child, lower-cased) whose subtree carries a
// tag, wherever the parent is.
var pairTags = map[[2]string]tagMask{}

// Extensions (lower-cased, with the dot) that carry a tag.
var extTags = map[string]tagMask{}

// Names without their extension (lower-cased) that carry a tag when the
// extension is one of codeExts: the configuration files that are code.
var stemTags = map[string]tagMask{}

// codeExts are the extensions of a configuration file that is a program
// its tool loads: JavaScript and TypeScript in every module flavour, and
// the languages some tools compile on the fly.
var codeExts = map[string]bool{
	".js": true, ".cjs": true, ".mjs": true, ".ts": true, ".cts": true, ".mts": true,
	".jsx": true, ".tsx": true, ".coffee": true, ".ls": true,
}

// siteDirs are directories whose .pth files Python's site module runs at
// every start (a line that begins with "import" is executed).
var siteDirs = map[string]bool{}

// tagNamed tags file names with m.
func tagNamed(m tagMask, ns ...string) {
	for _, n := range ns {
		nameTags[n] |= m
	}
}

// tagDir tags directory names (their whole subtree) with m.
func tagDir(m tagMask, ns ...string) {
	for _, n := range ns {
		dirTags[n] |= m
	}
}

// tagPair tags parent/child pairs (their whole subtree) with m.
func tagPair(m tagMask, ps ...string) {
	for _, p := range ps {
		a, b, _ := strings.Cut(p, "/")
		pairTags[[2]string{a, b}] |= m
	}
}

// tagExt tags extensions with m.
func tagExt(m tagMask, ns ...string) {
	for _, n := range ns {
		extTags[n] |= m
	}
}

// tagStem tags names without a code extension with m.
func tagStem(m tagMask, ns ...string) {
	for _, n := range ns {
		stemTags[n] |= m
	}
}

func init() {
	addTags()
	addToolStartTags()
}

// addTags fills the tables by file kind.
func addTags() {
	// What decides what gets installed and built.
	tagNamed(bManifest,
		"package.json", "cargo.toml", "go.mod", "go.work", "pyproject.toml",
		"setup.py", "setup.cfg", "pipfile", "gemfile", "pom.xml",
		"build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts",
		"composer.json", "mix.exs", "deno.json", "deno.jsonc", "pubspec.yaml",
		"package.swift", "podfile", "environment.yml", "environment.yaml",
		"conanfile.txt", "conanfile.py", "vcpkg.json", "build.sbt", "project.clj",
		"deps.edn", "stack.yaml", "dune-project", "packages.config",
		"directory.build.props", "directory.build.targets", "directory.packages.props",
		"cartfile", "renv.lock", "meson.build", "cmakelists.txt",
		"jsr.json", "bower.json", "lerna.json", "pnpm-workspace.yaml", "nx.json", "turbo.json",
	)
	tagExt(bManifest, ".csproj", ".fsproj", ".vbproj", ".gemspec", ".cabal", ".opam", ".nuspec", ".sln")
	tagNamed(bLockfile,
		"package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml",
		"bun.lockb", "bun.lock", "cargo.lock", "go.sum", "go.work.sum",
		"poetry.lock", "uv.lock", "pdm.lock", "pipfile.lock", "gemfile.lock",
		"composer.lock", "packages.lock.json", "gradle.lockfile", "mix.lock",
		"pubspec.lock", "package.resolved", "podfile.lock", "flake.lock",
		"deno.lock", "conda-lock.yml", "cartfile.resolved", "pixi.lock", "paket.lock",
	)

	// CI: what runs on someone else's machines with the project's secrets.
	tagNamed(bCI,
		".gitlab-ci.yml", ".gitlab-ci.yaml", "jenkinsfile", "azure-pipelines.yml",
		"azure-pipelines.yaml", ".travis.yml", "bitbucket-pipelines.yml", ".drone.yml",
		".woodpecker.yml", ".woodpecker.yaml", "appveyor.yml", ".appveyor.yml",
		"cloudbuild.yaml", "cloudbuild.yml", ".cirrus.yml", "codefresh.yml",
		"buildspec.yml", "codemagic.yaml", "bitrise.yml",
	)
	tagDir(bCI, ".circleci", ".buildkite", ".azure-pipelines", ".woodpecker", ".semaphore", ".tekton")
	tagPair(bCI, ".github/workflows", ".github/actions", ".github/dependabot.yml",
		".gitea/workflows", ".forgejo/workflows", ".gitlab/ci")

	// Editor configuration.
	tagNamed(bEditor,
		".editorconfig", ".exrc", ".nvimrc", ".nvim.lua", ".lvimrc", ".vimrc",
		".dir-locals.el", ".dir-locals-2.el",
	)
	tagExt(bEditor, ".code-workspace", ".sublime-project")
	tagDir(bEditor, ".vscode", ".idea", ".zed", ".fleet", ".vim", ".nvim", ".helix",
		".devcontainer", ".theia", ".nova", ".vs")

	// What runs code on its own: what an editor or a shell runs when the
	// folder opens, package-manager and toolchain settings, hook managers.
	tagNamed(bRunsCode,
		".npmrc", ".yarnrc", ".yarnrc.yml", ".pnpmfile.cjs", ".pnpmfile.mjs",
		"bunfig.toml", "rust-toolchain", "rust-toolchain.toml", ".tool-versions",
		".envrc", ".env.rc", ".mise.toml", "mise.toml", ".mise.local.toml", "mise.local.toml",
		".nvmrc", ".node-version", ".python-version", ".ruby-version", ".sdkmanrc",
		".pre-commit-config.yaml", ".pre-commit-hooks.yaml", "lefthook.yml",
		"lefthook.yaml", ".lefthook.yml", ".lefthook.yaml", "lefthook-local.yml",
		".lefthook-local.yml", "build.rs", "pip.conf", ".bazelrc", ".bazelversion",
		".gemrc", "gradle.properties", "gradlew", "gradlew.bat", "mvnw", "mvnw.cmd",
		".dir-locals.el", ".dir-locals-2.el", "global.json", "nuget.config",
		".condarc", ".pdbrc", ".vimrc", ".exrc", ".nvimrc", ".nvim.lua", ".lvimrc",
	)
	tagDir(bRunsCode, ".husky", ".devcontainer", ".mvn", ".githooks", ".lefthook", ".yarn")
	tagPair(bRunsCode, ".vscode/tasks.json", ".vscode/launch.json", ".cargo/config",
		".cargo/config.toml", "gradle/wrapper", ".bundle/config", ".pip/pip.conf",
		".config/dotnet-tools.json")

	// What steers an agent: its settings, instructions and MCP servers.
	tagNamed(bAgent,
		"claude.md", "claude.local.md", "agents.md", "agent.md", "gemini.md",
		".cursorrules", ".cursorignore", ".windsurfrules", ".clinerules", ".roomodes",
		".goosehints", ".mcp.json", "mcp.json", ".aider.conf.yml", ".rules",
		"opencode.json", "opencode.jsonc", ".codeiumignore", "copilot-instructions.md",
		".aiexclude", ".geminiignore",
	)
	tagDir(bAgent, ".claude", ".codex", ".gemini", ".cursor", ".windsurf", ".roo",
		".continue", ".junie", ".kiro", ".amazonq", ".kilocode", ".augment",
		".opencode", ".clinerules", ".agents", ".aider")
	tagPair(bAgent, ".github/instructions", ".github/prompts", ".github/chatmodes",
		".github/agents", ".vscode/mcp.json", ".cursor/mcp.json")

	// A repository inside the folder.
	tagNamed(bNestedRepo, ".gitmodules")
}

// addToolStartTags adds what a tool runs by itself when it starts in the
// folder (see docs/policy.md's table), and the Python site directories.
func addToolStartTags() {
	for _, d := range []string{"site-packages", "dist-packages", ".venv", "venv"} {
		siteDirs[d] = true
	}
	// What a tool runs by itself when it starts in the folder: the files
	// are code (or name commands) that the tool loads without asking. The
	// table in docs/policy.md says which tool runs each, and when. Build
	// files that are manifests too (package.json's scripts, setup.py, the
	// Gemfile, build.gradle, *.csproj, CMakeLists.txt) wait as manifests,
	// and editor settings (.vscode/settings.json, .idea/) as editor_config.
	tagNamed(bRunsCode,
		// Python: site runs .pth lines and the customize modules at every
		// start; pytest imports every conftest.py; tox and nox run theirs.
		"sitecustomize.py", "usercustomize.py", "conftest.py", "noxfile.py", "tox.ini",
		"pyvenv.cfg", "fabfile.py", "dodo.py",
		// Ruby: rake, guard, capistrano, vagrant, brew bundle, irb, rspec.
		"gems.rb", "rakefile", "rakefile.rb", "guardfile", "capfile", "vagrantfile",
		"brewfile", ".irbrc", ".pryrc", ".rspec",
		// JVM: Gradle init scripts, sbt and JVM options.
		"init.gradle", "init.gradle.kts", ".sbtopts", ".jvmopts",
		// Native builds: what make, just, task, earthly, tilt, cmake, zig and
		// bazel read as their script.
		"makefile", "gnumakefile", "justfile", ".justfile", "taskfile.yml", "taskfile.yaml",
		"taskfile.dist.yml", "earthfile", "tiltfile", "cmakepresets.json",
		"cmakeuserpresets.json", "meson_options.txt", "meson.options", "build.zig",
		"workspace", "workspace.bazel", "module.bazel",
		// Node and PHP: hook runners, and config files that are code.
		".huskyrc", ".huskyrc.json", ".lintstagedrc", ".lintstagedrc.json",
		".lintstagedrc.yaml", ".lintstagedrc.yml", "nodemon.json",
		".php-cs-fixer.php", ".php-cs-fixer.dist.php", "rector.php",
		// Git: filter and diff drivers by path, LFS's custom transfers.
		".gitattributes", ".lfsconfig",
		// Continue (an editor agent) runs what its config names.
		".continuerc.json",
	)
	tagExt(bRunsCode, ".proj", ".props", ".targets", ".mk", ".bzl")
	tagDir(bRunsCode, ".direnv", ".storybook")
	tagPair(bRunsCode, ".zed/tasks.json", ".helix/languages.toml", ".venv/bin", ".venv/scripts",
		"venv/bin", "venv/scripts", ".config/lefthook.yml", "project/plugins.sbt")
	tagNamed(bAgent, ".continuerc.json")
	// Configuration written as code, by stem: vite.config.ts, .eslintrc.cjs.
	tagStem(bRunsCode,
		"eslint.config", ".eslintrc", "vite.config", "vitest.config", "vitest.workspace",
		"jest.config", "webpack.config", "rollup.config", "rspack.config", "rsbuild.config",
		"esbuild.config", "tsup.config", "babel.config", ".babelrc", "postcss.config",
		".postcssrc", "tailwind.config", "next.config", "nuxt.config", "svelte.config",
		"astro.config", "remix.config", "vue.config", "quasar.config", "gatsby-config",
		"gatsby-node", "prettier.config", ".prettierrc", "stylelint.config", ".stylelintrc",
		"playwright.config", "cypress.config", "karma.conf", "protractor.conf", "gulpfile",
		"gruntfile", "jakefile", ".mocharc", "ava.config", "commitlint.config",
		".commitlintrc", "lint-staged.config", ".lintstagedrc", "release.config", ".releaserc",
		"metro.config", "react-native.config", "app.config", "electron.vite.config",
		"uno.config", "unocss.config", "histoire.config", "wxt.config", "panda.config",
		"drizzle.config", "knexfile", "ecosystem.config", ".huskyrc", "nodemon.config",
		"docusaurus.config", "vuepress.config", "vitepress.config", "syncpack.config",
		".ncurc", ".pnpmfile", "nightwatch.conf", "wdio.conf", "stencil.config",
		"angular.config", "ember-cli-build", "snowpack.config", "parcel.config",
	)
}

// pathInfo is what the entity builder knows of a path.
type pathInfo struct {
	clean string // normalised path
	name  string // last component, case kept
	ext   string // extension, lower-cased, without the dot
	dir   string // the parent, "" at the top
	depth int    // components above the name
	tags  tagMask
}

// cleanPath normalises a path as a rule sees it: backslashes become
// slashes, "." and empty components go, a leading "/" or "./" goes. ".."
// is kept as a component (it names nothing Kule would apply).
func cleanPath(p string) string {
	if strings.IndexByte(p, '\\') >= 0 {
		p = strings.ReplaceAll(p, `\`, "/")
	}
	if !strings.Contains(p, "//") && !strings.HasPrefix(p, "/") &&
		!strings.HasPrefix(p, "./") && !strings.Contains(p, "/./") &&
		!strings.HasSuffix(p, "/") && !strings.HasSuffix(p, "/.") && p != "." {
		return p
	}
	parts := strings.Split(p, "/")
	out := parts[:0]
	for _, c := range parts {
		if c == "" || c == "." {
			continue
		}
		out = append(out, c)
	}
	return strings.Join(out, "/")
}

// classifyPath works out a path's name, extension, directory, depth and
// tags. Matching is by name, case-insensitive, at any depth.
func classifyPath(p string) pathInfo {
	clean := cleanPath(p)
	info := pathInfo{clean: clean}
	dir, name := "", clean
	if i := strings.LastIndexByte(clean, '/'); i >= 0 {
		dir, name = clean[:i], clean[i+1:]
	}
	info.dir, info.name = dir, name
	if dir != "" {
		info.depth = strings.Count(dir, "/") + 1
	}
	lower := strings.ToLower(clean)
	if strings.Contains(lower, ". ") || strings.Contains(lower, " /") || strings.Contains(lower, "./") ||
		strings.HasSuffix(lower, ".") || strings.HasSuffix(lower, " ") {
		// Windows drops trailing dots and spaces from names: "package.json."
		// is package.json there.
		lower = trimWindows(lower)
	}
	lname := lower
	if i := strings.LastIndexByte(lower, '/'); i >= 0 {
		lname = lower[i+1:]
	}
	if i := strings.LastIndexByte(lname, '.'); i > 0 {
		info.ext = lname[i+1:]
	}
	info.tags = classifyLower(lower, lname)
	return info
}

func classifyLower(lower, lname string) tagMask {
	var m tagMask
	m |= nameTags[lname]
	if i := strings.LastIndexByte(lname, '.'); i > 0 {
		m |= extTags[lname[i:]]
		if codeExts[lname[i:]] {
			m |= stemTags[lname[:i]]
		}
	}
	if strings.HasPrefix(lname, "requirements") && strings.HasSuffix(lname, ".txt") {
		m |= bManifest
	}
	prev := ""
	i := 0
	for rest := lower; ; i++ {
		c, tail, more := strings.Cut(rest, "/")
		m |= dirTags[c]
		if more && strings.HasSuffix(lname, ".pth") && siteDirs[c] {
			m |= bRunsCode
		}
		if prev != "" {
			m |= pairTags[[2]string{prev, c}]
		}
		switch {
		case c == ".git" && i == 0:
			next, _, _ := strings.Cut(tail, "/")
			switch {
			case !more:
				m |= bGitDir
			case next == "hooks":
				m |= bGitHook
			case next == "config" && !strings.Contains(tail, "/"):
				m |= bGitConfig
			default:
				m |= bGitDir
			}
		case c == ".git":
			m |= bNestedRepo
			next, _, _ := strings.Cut(tail, "/")
			if more && next == "hooks" {
				m |= bGitHook
			}
			if more && next == "config" && !strings.Contains(tail, "/") {
				m |= bGitConfig
			}
		case c == ".kule" && i == 0:
			m |= bKuleSettings
		case prev == "requirements" && strings.HasSuffix(c, ".txt") && !more:
			m |= bManifest
		}
		if !more {
			break
		}
		prev, rest = c, tail
	}
	return m
}

// trimWindows drops the trailing dots and spaces of every component.
func trimWindows(p string) string {
	parts := strings.Split(p, "/")
	for i, c := range parts {
		if t := strings.TrimRight(c, ". "); t != "" {
			parts[i] = t
		}
	}
	return strings.Join(parts, "/")
}

// underKule reports whether a path is the folder's .kule or below it.
func underKule(p string) bool {
	return classifyPath(p).tags&bKuleSettings != 0
}

//go:embed builtin/hosts.txt
var hostsTxt []byte

// hostEntry is what the embedded host list says of one host name.
type hostEntry struct {
	tags   tagMask
	agents []string // the agents whose model API the host is
}

var knownHosts = parseHosts(hostsTxt)

// parseHosts reads builtin/hosts.txt: "tag host [agent ...]" per line, #
// comments.
func parseHosts(b []byte) map[string]hostEntry {
	out := map[string]hostEntry{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		host := reverseLabels(f[1])
		e := out[host]
		e.tags |= tagBit(f[0])
		e.agents = append(e.agents, f[2:]...)
		out[host] = e
	}
	return out
}

// reverseLabels turns "org.example.api" into "api.example.org".
func reverseLabels(s string) string {
	labels := strings.Split(s, ".")
	for i, j := 0, len(labels)-1; i < j; i, j = i+1, j-1 {
		labels[i], labels[j] = labels[j], labels[i]
	}
	return strings.Join(labels, ".")
}

// cleanHost lower-cases a host name and drops a trailing dot and IPv6
// brackets.
func cleanHost(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	h = strings.TrimSuffix(h, ".")
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	return h
}

// RegistryHosts lists the package registries the built-in host list knows,
// sorted: the proxy looks into them only to refuse publishing.
func RegistryHosts() []string {
	var out []string
	for h, e := range knownHosts {
		if e.tags&tagBit(TagPackageRegistry) != 0 {
			out = append(out, h)
		}
	}
	sort.Strings(out)
	return out
}
