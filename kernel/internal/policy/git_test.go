package policy

import (
	"testing"
)

// Every git request the kernel makes, under each layer: the built-in
// balanced and careful policies, a person's policy that replaces them, and a
// repository's .kule/policy.cedar that forbids.
func TestGitActionsUnderEveryLayer(t *testing.T) {
	t.Parallel()
	gitReq := func(a Action, path, change string) Request {
		r := GitRequest(a, path, "")
		r.GitChange = change
		return r
	}
	nested := func(r Request) Request { r.NestedRepo = true; return r }
	reqs := map[string]Request{
		"ref fast-forward": gitReq(GitRef, "refs/heads/main", ""),
		"ref new":          gitReq(GitRef, "refs/heads/topic", ""),
		"ref deleted":      gitReq(GitRef, "refs/heads/feature", GitDelete),
		"head switch":      gitReq(GitRef, "HEAD", GitSwitch),
		"head detached":    gitReq(GitRef, "HEAD", GitDetach),
		"head orphan":      gitReq(GitRef, "HEAD", GitOrphan),
		"rewrite":          gitReq(GitRewrite, "refs/heads/main", ""),
		"index":            gitReq(GitIndex, ".git/index", ""),
		"staged differs":   gitReq(GitIndex, ".git/index", GitStagedDiffers),
		"hook":             gitReq(GitHook, ".git/hooks/pre-commit", ""),
		"config":           gitReq(GitConfig, ".git/config", ""),
		"brings go.mod":    BringsRequest("go.mod", "modify", ""),
		"brings ci":        BringsRequest(".github/workflows/test.yml", "modify", ""),
		"brings source":    BringsRequest("main.go", "modify", ""),
		"nested ref":       nested(gitReq(GitRef, "sub/.git/refs/heads/main", "")),
	}
	home := t.TempDir()
	person := t.TempDir()
	write(t, PersonPath(person), `
@id("mine")
permit (principal, action, resource);

@id("no-branch-moves")
@verdict("deny")
forbid (principal, action == Kule::Action::"git.ref", resource) when { resource == Kule::Path::"refs/heads/main" };
`)
	folder := t.TempDir()
	write(t, FolderPath(folder), `
@id("repo-no-config")
@verdict("deny")
forbid (principal, action == Kule::Action::"git.config", resource);

@id("repo-no-main")
@verdict("ask")
forbid (principal, action in [Kule::Action::"git.ref", Kule::Action::"git.rewrite"], resource) when { resource == Kule::Path::"refs/heads/main" };
`)
	engines := map[string]*Engine{
		"balanced":          mustLoad(t, home, t.TempDir(), Balanced),
		"careful":           mustLoad(t, home, t.TempDir(), Careful),
		"person":            mustLoad(t, person, t.TempDir(), ""),
		"repository forbid": mustLoad(t, home, folder, Balanced),
	}
	table := map[string]map[string]want{
		"balanced": {
			"ref fast-forward": {Pass, "changes-pass"},
			"ref new":          {Pass, "changes-pass"},
			"ref deleted":      {Ask, "branch-deletions"},
			"head switch":      {Pass, "changes-pass"},
			"head detached":    {Ask, "head-moves"},
			"head orphan":      {Ask, "head-moves"},
			"rewrite":          {Ask, "history-rewrites"},
			"index":            {Pass, "changes-pass"},
			"staged differs":   {Ask, "staged-differs"},
			"hook":             {Deny, "git-hooks"},
			"config":           {Ask, "git-config"},
			"brings go.mod":    {Ask, "manifests-and-lockfiles"},
			"brings ci":        {Ask, "ci"},
			"brings source":    {Pass, "changes-pass"},
			"nested ref":       {Ask, "nested-repositories"},
		},
		"careful": {
			"ref fast-forward": {Ask, "every-change"},
			"ref new":          {Ask, "every-change"},
			"ref deleted":      {Ask, "branch-deletions,every-change"},
			"head switch":      {Ask, "every-change"},
			"head detached":    {Ask, "every-change,head-moves"},
			"head orphan":      {Ask, "every-change,head-moves"},
			"rewrite":          {Ask, "every-change,history-rewrites"},
			"index":            {Ask, "every-change"},
			"staged differs":   {Ask, "every-change,staged-differs"},
			"hook":             {Deny, "git-hooks"},
			"config":           {Ask, "every-change,git-config"},
			"brings go.mod":    {Ask, "every-change,manifests-and-lockfiles"},
			"brings ci":        {Ask, "ci,every-change"},
			"brings source":    {Ask, "every-change"},
			"nested ref":       {Ask, "every-change,nested-repositories"},
		},
		"person": {
			"ref fast-forward": {Deny, "no-branch-moves"},
			"ref new":          {Pass, "mine"},
			"ref deleted":      {Pass, "mine"},
			"head switch":      {Pass, "mine"},
			"head detached":    {Pass, "mine"},
			"head orphan":      {Pass, "mine"},
			"rewrite":          {Pass, "mine"},
			"index":            {Pass, "mine"},
			"staged differs":   {Pass, "mine"},
			"hook":             {Pass, "mine"},
			"config":           {Pass, "mine"},
			"brings go.mod":    {Pass, "mine"},
			"brings ci":        {Pass, "mine"},
			"brings source":    {Pass, "mine"},
			"nested ref":       {Pass, "mine"},
		},
		"repository forbid": {
			"ref fast-forward": {Ask, "repo-no-main"},
			"ref new":          {Pass, "changes-pass"},
			"ref deleted":      {Ask, "branch-deletions"},
			"head switch":      {Pass, "changes-pass"},
			"head detached":    {Ask, "head-moves"},
			"head orphan":      {Ask, "head-moves"},
			"rewrite":          {Ask, "history-rewrites,repo-no-main"},
			"index":            {Pass, "changes-pass"},
			"staged differs":   {Ask, "staged-differs"},
			"hook":             {Deny, "git-hooks"},
			"config":           {Deny, "repo-no-config"},
			"brings go.mod":    {Ask, "manifests-and-lockfiles"},
			"brings ci":        {Ask, "ci"},
			"brings source":    {Pass, "changes-pass"},
			"nested ref":       {Ask, "nested-repositories"},
		},
	}
	for layer, wants := range table {
		for name, r := range reqs {
			w, ok := wants[name]
			if !ok {
				t.Fatalf("%s: no expectation for %s", layer, name)
			}
			t.Run(layer+"/"+name, func(t *testing.T) {
				check(t, judgeOne(t, engines[layer], gitTask, r), w)
			})
		}
	}
}

// A ref's new commits bring file changes; they are judged as those files,
// but never count as deletions of the folder's files (those are the file
// effects' own).
func TestBringsNeverCountAsDeletions(t *testing.T) {
	t.Parallel()
	e := mustLoad(t, t.TempDir(), t.TempDir(), Balanced)
	var reqs []Request
	for i := range 300 {
		reqs = append(reqs, BringsRequest("f"+string(rune('a'+i%26))+string(rune('a'+i/26)), "delete", ""))
	}
	reqs = append(reqs, Request{Action: FileDelete, Path: "one.txt", Effect: 0})
	r := e.Judge(gitTask, reqs)
	if v := r.Verdicts[len(reqs)-1]; v.Outcome != Pass {
		t.Errorf("one file deleted beside 300 deletions a branch brings: %v", v)
	}
}

// A remembered approval lets a branch's file change through as it does the
// file's own.
func TestRememberedRulesApplyToWhatABranchBrings(t *testing.T) {
	t.Parallel()
	home, folder := t.TempDir(), t.TempDir()
	v := judgeOne(t, mustLoad(t, home, folder, Balanced), gitTask, Request{Action: FileModify, Path: "go.mod", Effect: 0})
	if _, _, err := Remember(home, folder, []Verdict{v}); err != nil {
		t.Fatal(err)
	}
	check(t, judgeOne(t, mustLoad(t, home, folder, Balanced), gitTask, BringsRequest("go.mod", "modify", "")), want{Pass, "manifests-and-lockfiles"})
}
