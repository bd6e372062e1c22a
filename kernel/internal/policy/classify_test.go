package policy

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// withoutToolStartTags empties the tables and fills them again without
// what addToolStartTags adds; restore puts it back. Only tests that are not
// parallel call it: parallel tests wait until they are done.
func withoutToolStartTags() (restore func()) {
	fill := func(toolStart bool) {
		clear(nameTags)
		clear(dirTags)
		clear(pairTags)
		clear(extTags)
		clear(stemTags)
		clear(siteDirs)
		addTags()
		if toolStart {
			addToolStartTags()
		}
	}
	fill(false)
	return func() { fill(true) }
}

// toolStartRows reads docs/policy.md's table of files that run code when a
// tool starts: each row's example paths and the tags it says they carry.
func toolStartRows(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile("../../../docs/policy.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "<!-- runs-code table: begin -->")
	table, _, ok2 := strings.Cut(table, "<!-- runs-code table: end -->")
	if !ok || !ok2 {
		t.Fatal("docs/policy.md has no runs-code table")
	}
	tick := regexp.MustCompile("`([^`]+)`")
	rows := map[string][]string{}
	for _, line := range strings.Split(table, "\n") {
		cols := strings.Split(line, "|")
		if len(cols) != 6 || strings.HasPrefix(strings.TrimSpace(cols[1]), "---") || strings.TrimSpace(cols[1]) == "File" {
			continue
		}
		var tags []string
		for _, m := range tick.FindAllStringSubmatch(cols[4], -1) {
			tags = append(tags, m[1])
		}
		for _, m := range tick.FindAllStringSubmatch(cols[1], -1) {
			rows[m[1]] = tags
		}
	}
	if len(rows) < 100 {
		t.Fatalf("docs/policy.md's runs-code table names only %d files", len(rows))
	}
	return rows
}

// Every file docs/policy.md lists as running code when a tool starts
// carries a tag the table says, and waits under the balanced policy.
func TestToolStartFilesWait(t *testing.T) {
	t.Parallel()
	e := mustLoad(t, t.TempDir(), t.TempDir(), Balanced)
	for path, tags := range toolStartRows(t) {
		got := classifyPath(path).tags.Names()
		if !slices.ContainsFunc(tags, func(tag string) bool { return slices.Contains(got, tag) }) {
			t.Errorf("%s: tags %v, docs/policy.md says %v", path, got, tags)
		}
		for _, p := range []string{path, "sub/dir/" + path, strings.ToUpper(path)} {
			if v := judgeOne(t, e, gitTask, fm(p)); v.Outcome != Ask {
				t.Errorf("%s: %s, want it to wait", p, v)
			}
		}
	}
}

// The files the attacks name, and their kin, are in the table; files that
// only look alike are not.
func TestToolStartClassification(t *testing.T) {
	t.Parallel()
	rows := toolStartRows(t)
	for _, p := range []string{
		"eslint.config.js", ".eslintrc.js", "vite.config.ts", ".venv/lib/python3.12/site-packages/x.pth",
		".lfsconfig", ".continuerc.json", "jest.config.js", "webpack.config.js", "babel.config.js",
		"conftest.py", ".pre-commit-config.yaml", "vitest.config.ts", "rollup.config.mjs",
		"postcss.config.js", "tailwind.config.ts", "next.config.mjs", "nuxt.config.ts",
		"svelte.config.js", "astro.config.mjs", ".babelrc.js", "prettier.config.js", ".prettierrc.js",
		"stylelint.config.js", "sitecustomize.py", "usercustomize.py", "setup.py", "noxfile.py",
		"tox.ini", "Rakefile", "Gemfile", "build.gradle", "build.gradle.kts", "settings.gradle",
		"gradle/wrapper/gradle-wrapper.properties", ".mvn/wrapper/maven-wrapper.properties",
		"build.rs", ".cargo/config.toml", "Makefile", "justfile", ".envrc", ".direnv/x",
		".vscode/tasks.json", ".vscode/settings.json", ".idea/workspace.xml", ".husky/pre-commit",
		"lefthook.yml", ".gitattributes", ".npmrc", ".yarnrc", ".yarnrc.yml", "Directory.Build.props",
		"Directory.Build.targets", "App.csproj",
	} {
		if _, ok := rows[p]; !ok {
			t.Errorf("docs/policy.md's table does not list %s", p)
		}
	}
	waits := bRunsCode | bEditor | bManifest
	for p, want := range map[string]tagMask{
		"web/eslint.config.mjs":                             bRunsCode,
		"web/.ESLintRC.CJS":                                 bRunsCode,
		"app/vite.config.mts":                               bRunsCode,
		`pkg\Jest.Config.TS`:                                bRunsCode,
		"venv/lib/python3.11/site-packages/_virtualenv.pth": bRunsCode,
		"usr/lib/python3/dist-packages/zz.pth":              bRunsCode,
		".venv/x.pth":                                       bRunsCode,
		"src/conftest.py":                                   bRunsCode,
		"tests/unit/conftest.py":                            bRunsCode,
		"sub/GNUmakefile":                                   bRunsCode,
		"mk/rules.mk":                                       bRunsCode,
		"tools/defs.bzl":                                    bRunsCode,
		"lib/.gitattributes":                                bRunsCode,
		"build/Common.props":                                bRunsCode,
		".continuerc.json":                                  bRunsCode | bAgent,
		".storybook/preview.ts":                             bRunsCode,

		"models/resnet50.pth":   0, // weights outside a site directory: Python never runs them
		".eslintrc.json":        0, // data: runs nothing of the folder's own
		"web/.prettierrc.yaml":  0,
		"docs/vite.config.md":   0,
		"src/app.config.json":   0,
		"src/config.js":         0,
		"src/eslint.config.txt": 0,
		"notes/makefile.md":     0,
		"tsconfig.json":         0,
	} {
		if got := classifyPath(p).tags & (waits | bAgent); got != want {
			t.Errorf("%s: tags %v, want %v", p, got.Names(), want.Names())
		}
	}
}

// A commit of eslint.config.js (which ESLint runs, and the editor with it,
// as the folder opens) or of a .pth file in the project's virtualenv passes
// without these tags; with them it waits.
func TestToolStartFilesWaitOnlyWithTheirTags(t *testing.T) {
	attacks := []Request{
		fm("eslint.config.js"), fm(".eslintrc.js"), fm("vite.config.ts"),
		{Action: FileCreate, Path: ".venv/lib/python3.12/site-packages/evil.pth", Effect: -1},
		fm(".lfsconfig"), fm(".continuerc.json"), fm("conftest.py"), fm("Makefile"),
	}
	judge := func() []Verdict {
		return mustLoad(t, t.TempDir(), t.TempDir(), Balanced).Judge(gitTask, attacks).Verdicts
	}
	restore := withoutToolStartTags()
	defer restore()
	for _, v := range judge() {
		if v.Outcome != Pass {
			t.Errorf("without the tags %s should pass (else this test shows nothing): %s", v.Request.Path, v)
		}
	}
	restore()
	for _, v := range judge() {
		if v.Outcome != Ask || !slices.Contains(v.Rules, "runs-code") {
			t.Errorf("%s: %s, want it to wait (runs-code)", v.Request.Path, v)
		}
	}
}
