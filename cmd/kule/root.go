package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// exitCode is returned by a command that wants kule to exit with a code of
// its own without printing an error (kule exec passes its command's code).
type exitCode int

func (e exitCode) Error() string { return "exit status" }

func asExit(err error, ec *exitCode) bool { return errors.As(err, ec) }

func rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "kule",
		Short:         "Run agents' commands in a copy of a folder; commit what they changed",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       currentVersion().String(),
	}
	root.SetVersionTemplate("kule {{.Version}}\n")
	root.AddCommand(
		newCommand(),
		execCommand(),
		statusCommand(),
		commitCommand(),
		rollbackCommand(),
		undoCommand(),
		listCommand(),
		deleteCommand(),
		historyCommand(),
		isolationCommand(),
		revealCommand(),
		policyCommand(),
		rulesCommand(),
		limitsCommand(),
		budgetCommand(), dailyBudgetCommand(),
		homeCommand(),
		secretsCommand(),
		transportCommand(),
		pluginsCommand(), extCommand(), previewCommand(),
		agentsCommand(),
		runCommand(),
		stepsCommand(),
		daemonCommand(), appCommand(), nameCommand(), colorCommand(), groupCommand(),
		memoryCommand(),
		versionCommand(), doctorCommand(), packagingCommand(),
	)
	// cobra adds its completion and help commands at Execute; made now,
	// they get their examples and argument errors too.
	root.InitDefaultCompletionCmd()
	root.InitDefaultHelpCmd()
	wordArgErrors(root)
	addExamples(root)
	addCompletions(root)
	return root
}

// wordArgErrors wraps every command's argument check so that a wrong
// count says, in words, what the command takes (from its Use line) and
// where its examples are, instead of cobra's "accepts 1 arg(s), received 0".
func wordArgErrors(c *cobra.Command) {
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return argError(cmd, args, err)
			}
			return nil
		}
	}
	for _, s := range c.Commands() {
		wordArgErrors(s)
	}
}

// argError says what cmd expected and what it got: "kule status takes
// TASK (TASK: a task id, …), got nothing; see kule status --help" (after
// main's "kule: "). An unknown subcommand keeps cobra's own message, which names it.
func argError(cmd *cobra.Command, args []string, err error) error {
	if strings.HasPrefix(err.Error(), "unknown command") && cmd.HasAvailableSubCommands() {
		return err
	}
	_, want, _ := strings.Cut(cmd.Use, " ")
	var words []string
	for _, f := range strings.Fields(want) {
		if !strings.HasPrefix(f, "[-") && !strings.HasPrefix(f, "-") {
			words = append(words, f)
		}
	}
	takes := "no arguments"
	if len(words) > 0 {
		takes = strings.Join(words, " ")
		for _, w := range words {
			if hint, ok := argWords[strings.Trim(w, "[].")]; ok {
				takes += " (" + strings.Trim(w, "[].") + ": " + hint + ")"
				break
			}
		}
	}
	got := "got nothing"
	switch len(args) {
	case 0:
	case 1:
		got = fmt.Sprintf("got 1 argument: %s", safeLine(args[0]))
	default:
		got = fmt.Sprintf("got %d arguments: %s", len(args), safeLine(strings.Join(args, " ")))
	}
	name := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
	if name == cmd.Root().Name() {
		name = "kule"
	}
	return fmt.Errorf("%s takes %s, %s; see %s --help", name, takes, got, cmd.CommandPath())
}

// argWords say what the words of a Use line stand for, the first time one
// is named in an argument error.
var argWords = map[string]string{
	"TASK":   "a task id, or a unique prefix of one, as kule list shows",
	"FOLDER": "a folder's path",
	"AGENT":  "an agent's name, as kule agents lists them",
}
