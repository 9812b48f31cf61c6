package main

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/qim-dev/qim/gates/harnessvars"
	"github.com/qim-dev/qim/gates/lint"
	"github.com/qim-dev/qim/services/cmdline"
)

// options holds the flags of one invocation; it is built per command so tests can run many.
type options struct {
	root      string
	json      bool
	skip      []string
	only      []string
	noInstall bool
}

// errFindings marks a run that completed with findings (exit 1), as opposed to one that could not
// run (exit 2).
var errFindings = cmdline.Failure(errors.New("findings"))

func newCommand(stdout, stderr io.Writer) *cobra.Command {
	opts := &options{}
	cmd := &cobra.Command{
		Use:   "qim-lint",
		Short: "Run Q-IM's contract lint over a checkout",
		Long: `qim-lint runs the contract lint: gofmt, go vet, golangci-lint and the Q-IM source rules
(` + strings.Join(lint.CheckNames(), ", ") + `).
It prints a table of checks, then each finding as file:line: [rule] text. It never modifies the
tree. Exceptions to source rules live in ` + lint.AllowFile + `, one "path:rule  # reason" per line.

Exit status: 0 when every selected check passed, 1 on any finding, 2 when the lint could not run.
golangci-lint ` + lint.GolangciVersion + ` is taken from <root>/bin or PATH and installed into
<root>/bin when missing (unless --no-install, which makes a missing binary a failure).

Examples:
  qim-lint
  qim-lint --root /work/main --json > lint.json
  qim-lint --skip golangci
  qim-lint --only aliases,secret-logging`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd.Context(), opts, stdout, stderr)
		},
	}
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	f := cmd.Flags()
	f.StringVar(&opts.root, "root", ".", "repository root to lint")
	f.BoolVar(&opts.json, "json", false, "print the report as JSON instead of a table")
	f.StringSliceVar(&opts.skip, "skip", nil, "checks to skip (comma-separated or repeated)")
	f.StringSliceVar(&opts.only, "only", nil, "run only these checks")
	f.BoolVar(&opts.noInstall, "no-install", false, "never install golangci-lint; a missing binary fails the check")
	cmdline.Setup(cmd, cmdline.RefuseUnknownEnv(harnessvars.CheckEnviron))
	return cmd
}

func run(ctx context.Context, opts *options, stdout, stderr io.Writer) error {
	rep, err := lint.Run(ctx, lint.Options{Root: opts.root, Out: stderr, Skip: opts.skip,
		Only: opts.only, NoInstall: opts.noInstall})
	if err != nil {
		return err
	}
	if opts.json {
		err = lint.WriteJSON(stdout, rep)
	} else {
		err = lint.WriteText(stdout, rep)
	}
	if err != nil {
		return err
	}
	if !rep.Passed {
		return errFindings
	}
	return nil
}

// execute runs the command and maps its outcome to an exit status.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := newCommand(stdout, stderr)
	cmd.SetArgs(args)
	return cmdline.Execute(ctx, cmd, stderr)
}
