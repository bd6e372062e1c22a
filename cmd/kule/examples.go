package main

import "github.com/spf13/cobra"

// commandExamples are the examples --help shows for each command, by its
// path, for the commands whose definitions carry none of their own. A
// command's own Example field wins. TestEveryCommandHasExamples holds every
// command to having one.
var commandExamples = map[string]string{
	"kule agents set": `  kule agents set claude-code base_url=http://localhost:4000   # a local gateway
  kule agents set claude-code base_url=                         # back to the vendor's host`,
	"kule ext": `  kule ext new me.hello                 # a working skeleton to edit
  kule ext pack me.hello                # → me.hello-0.1.0.kulext
  kule ext install me.hello-0.1.0.kulext && kule ext show me.hello && kule ext approve me.hello`,
	"kule ext approve": `  kule ext approve me.hello`,
	"kule ext dev":     `  kule ext dev ./me.hello hello         # run its hello command on each change`,
	"kule ext disable": `  kule ext disable me.hello`,
	"kule ext enable":  `  kule ext enable me.hello`,
	"kule ext install": `  kule ext install ~/Downloads/me.hello-0.1.0.kulext`,
	"kule ext list":    `  kule ext list`,
	"kule ext new":     `  kule ext new me.hello`,
	"kule ext pack":    `  kule ext pack ./me.hello`,
	"kule ext remove":  `  kule ext remove me.hello`,
	"kule ext run":     `  kule ext run me.hello.hello world`,
	"kule ext show":    `  kule ext show me.hello               # the manifest, its permissions in words, the sha256`,
	"kule memory": `  kule memory list
  kule memory search "npm install"
  kule memory forget --task 1a2b`,
	"kule memory export": `  kule memory export > runs.jsonl`,
	"kule memory forget": `  kule memory forget 42
  kule memory forget --task 1a2b
  kule memory forget --folder ~/notes`,
	"kule memory list":   `  kule memory list`,
	"kule memory search": `  kule memory search "tests failed"`,
	"kule memory show":   `  kule memory show 42`,
	"kule preview": `  kule preview 1a2b notes/plan.md
  kule preview 1a2b budget.xlsx:Sheet1!B2:D9   # what kule run --about tells the agent
  kule preview 1a2b data.json --format --json`,
	"kule transport": `  kule transport add slack --channel C0123 --operator U0456
  kule transport list
  kule transport test slack`,
	"kule transport add":    `  kule transport add discord --channel 1234567890 --operator 987654321`,
	"kule transport list":   `  kule transport list`,
	"kule transport remove": `  kule transport remove slack`,
	"kule transport test":   `  kule transport test slack            # starts it as the daemon does and posts to the channel`,
	"kule": `  kule new ~/notes                      # a task: a copy of the folder
  kule exec 1a2b -- mv drafts archive   # run a command in the copy
  kule status 1a2b                      # what it changed, and the policy's ruling
  kule commit 1a2b                      # put it in the folder, keeping a checkpoint
  kule undo 1a2b                        # take it back`,
	"kule agents": `  kule agents                           # which agents can start here
  kule agents show claude-code`,
	"kule agents add":      `  kule agents add my-agent              # from the ACP registry (kule agents registry)`,
	"kule agents approve":  `  kule agents approve my-agent`,
	"kule agents install":  `  kule agents install claude-code`,
	"kule agents registry": `  kule agents registry`,
	"kule agents show":     `  kule agents show codex`,
	"kule agents try": `  kule agents try my-agent              # one trial turn in a throw-away task
  kule agents try my-agent --apply      # and keep the hosts it needed
  kule agents try codex --time 1m       # stop the trial after a minute`,
	"kule app": `  kule app
  kule app --print-url                  # print the address instead of opening a browser`,
	"kule budget": `  kule budget 1a2b 5 EUR
  kule budget 1a2b off
  kule budget 1a2b                      # what it has spent`,
	"kule commit": `  kule commit 1a2b
  kule commit 1a2b --approve            # also what waits for approval
  kule commit 1a2b --json`,
	"kule completion": `  source <(kule completion bash)
  kule completion zsh > "${fpath[1]}/_kule"
  kule completion fish > ~/.config/fish/completions/kule.fish`,
	"kule completion bash":       "  source <(kule completion bash)",
	"kule completion zsh":        "  kule completion zsh > \"${fpath[1]}/_kule\"",
	"kule completion fish":       "  kule completion fish > ~/.config/fish/completions/kule.fish",
	"kule completion powershell": "  kule completion powershell | Out-String | Invoke-Expression",
	"kule help":                  "  kule help commit",
	"kule daemon": `  kule daemon                           # in the foreground; kule app starts one for you
  kule daemon --idle=-1s                # never exit (as the systemd user unit runs it)`,
	"kule daily-budget": `  kule daily-budget 20 EUR
  kule daily-budget off`,
	"kule delete": `  kule delete 1a2b
  kule delete 1a2b --yes`,
	"kule exec": `  kule exec 1a2b -- make test
  kule exec 1a2b --no-network -- ./build.sh
  kule exec 1a2b --allow-write ~/.cache/go-build -- go build ./...`,
	"kule group": `  kule group list
  kule group new release --colour teal`,
	"kule group list": `  kule group list`,
	"kule group move": `  kule group move 1a2b release
  kule group move 1a2b none`,
	"kule group new": `  kule group new release --colour teal --policy careful`,
	"kule history": `  kule history 1a2b
  kule history 1a2b --verify --json`,
	"kule home": `  kule home 1a2b                        # what its commands wrote in your home
  kule home 1a2b diff ~/.zshrc
  kule home 1a2b apply ~/.zshrc
  kule home 1a2b undo`,
	"kule isolation": `  kule isolation
  kule isolation --accept-weaker on     # run with what there is, said on every run`,
	"kule limits": `  kule limits                           # the home's limits
  kule limits 1a2b --memory 4G --time 30m
  kule limits 1a2b --memory off`,
	"kule list": `  kule list
  kule list --fresh                     # look at every copy now
  kule list --json | jq -r '.[].id'`,
	"kule new": `  kule new ~/notes
  kule new . --json`,
	"kule plugins": `  kule plugins list
  kule plugins show my-differ`,
	"kule plugins approve": `  kule plugins approve my-differ`,
	"kule plugins install": `  kule plugins install ./bin/my-differ`,
	"kule plugins list":    `  kule plugins list`,
	"kule plugins remove":  `  kule plugins remove my-differ`,
	"kule plugins show":    `  kule plugins show my-differ`,
	"kule policy": `  kule policy                           # which policy rules commits here
  kule policy careful
  kule policy balanced --folder ~/notes`,
	"kule reveal": `  kule reveal
  kule reveal add ~/.config/git`,
	"kule reveal add":    `  kule reveal add ~/.config/git`,
	"kule reveal remove": `  kule reveal remove ~/.config/git`,
	"kule rollback":      `  kule rollback 1a2b`,
	"kule rules":         `  kule rules`,
	"kule rules allow": `  kule rules allow api.example.com:443
  kule rules allow pypi.org:443 --folder ~/src/tool`,
	"kule rules forget": `  kule rules forget 2                   # the number kule rules shows`,
	"kule rules proposals": `  kule rules proposals
  kule rules proposals --folder ~/src/app --json`,
	"kule rules accept": `  kule rules accept g1a2b3c4             # the id kule rules proposals shows`,
	"kule run": `  kule run 1a2b --agent claude-code "tidy the notes"
  kule run 1a2b --agent codex --ask "fix the failing test"
  kule run 1a2b --resume                        # resume the turn Kule was stopped in`,
	"kule secrets": `  kule secrets list
  kule secrets add OPENAI_API_KEY --host api.openai.com`,
	"kule secrets add": `  kule secrets add OPENAI_API_KEY --host api.openai.com   # reads the value from stdin or asks
  kule secrets add CLOUD_TOKEN --host api.cloud.example --lease 1h --renew 4 --mint 'cloud auth print-token' --revoke 'cloud auth revoke -'`,
	"kule secrets list":   `  kule secrets list`,
	"kule secrets remove": `  kule secrets remove OPENAI_API_KEY`,
	"kule secrets leases": `  kule secrets leases
  kule secrets leases --json`,
	"kule secrets grant": `  kule secrets grant 3f2a CLOUD_TOKEN --renew 2`,
	"kule status": `  kule status 1a2b
  kule status 1a2b --json | jq '.changes | length'`,
	"kule steps": `  kule steps 1a2b
  kule steps 1a2b --json`,
	"kule undo": `  kule undo 1a2b`,
}

// addExamples gives each command without an Example its entry in
// commandExamples.
func addExamples(c *cobra.Command) {
	if c.Example == "" {
		c.Example = commandExamples[c.CommandPath()]
	}
	for _, s := range c.Commands() {
		addExamples(s)
	}
}
