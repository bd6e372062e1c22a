package main

import (
	"errors"

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
	}
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
		pluginsCommand(),
		agentsCommand(),
		runCommand(),
		stepsCommand(),
		daemonCommand(), appCommand(), nameCommand(), colorCommand(), groupCommand(),
	)
	return root
}
