// Package cmdline is what the command line of every Q-IM binary (qim, qimctl, qim-gate,
// qim-loadgen, qim-lint, qim-desktop) shares, so a user meets one convention:
//
//   - --version prints "<binary> <version> (revision …)" from the build (services/buildinfo);
//   - an error is one line on stderr, "<binary>: <message>", without cobra's "Error:" prefix or
//     a usage dump after a failure at run time;
//   - a QIM_* variable the binary does not know refuses every command (the product's binaries
//     know the product's variables, the harness's also the harness's): a typo would otherwise
//     run on a default the user believes changed. --help and --version still answer;
//   - the exit status is 0 when the job is done, 1 when it is done and its verdict is a failure
//     (a failed check, gate or audit, lint findings: an error wrapping ErrFailed), and 2 when it
//     could not be done (a usage error, bad configuration, an unreachable dependency, I/O).
//
// 1 versus 2 is the distinction a script needs: a release pipeline stops on 1 and retries or
// pages on 2. Rejected: cobra's defaults (exit 1 for everything, "Error: " before a message that
// already names the binary, the usage text after a broken connection).
package cmdline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/qim-dev/qim/services/buildinfo"
)

// ErrFailed marks an error that is a verdict, not an inability to run: exit status 1.
var ErrFailed = errors.New("failed")

// Exit statuses.
const (
	ExitOK      = 0
	ExitFailed  = 1
	ExitCannot  = 2
	usagePrefix = "usage: "
)

// Failure wraps err, a verdict (checks that failed, findings), so that it exits 1; its message
// is err's.
func Failure(err error) error {
	if err == nil {
		return nil
	}
	return failure{err}
}

type failure struct{ err error }

func (f failure) Error() string   { return f.err.Error() }
func (f failure) Unwrap() []error { return []error{f.err, ErrFailed} }

// Option adds to what Setup gives a root command.
type Option func(root *cobra.Command)

// RefuseUnknownEnv runs check on the process environment before any command of the binary runs
// (a root persistent hook, which cobra runs before every subcommand's own work); its error is the
// command's. Subcommands must not set a PersistentPreRun of their own, which would replace it.
func RefuseUnknownEnv(check func(environ []string) error) Option {
	return func(root *cobra.Command) {
		root.PersistentPreRunE = func(*cobra.Command, []string) error { return check(os.Environ()) }
	}
}

// Setup gives a binary's root command the shared behaviour: --version, and errors left to
// Execute to print. Call it once, on the root, after its subcommands are added.
func Setup(root *cobra.Command, opts ...Option) {
	for _, o := range opts {
		o(root)
	}
	root.Version = buildinfo.Read().Line()
	root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	root.SilenceErrors = true
	root.SilenceUsage = true
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return fmt.Errorf("%s%w (see %s --help)", usagePrefix, err, cmd.CommandPath())
	})
}

// Execute runs root with ctx and returns the exit status, printing an error as one line to
// stderr.
func Execute(ctx context.Context, root *cobra.Command, stderr io.Writer) int {
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	_, _ = fmt.Fprintln(stderr, Line(root.Name(), err))
	if errors.Is(err, ErrFailed) {
		return ExitFailed
	}
	return ExitCannot
}

// Line is the one line an error is printed as: "<binary>: <message>", without a second
// "<binary>: " when the message already starts with it.
func Line(binary string, err error) string {
	return binary + ": " + strings.TrimPrefix(err.Error(), binary+": ")
}
