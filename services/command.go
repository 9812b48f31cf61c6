package services

import (
	"context"
	"log/slog"
	"os"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/qim-dev/qim/services/cmdline"
	"github.com/qim-dev/qim/services/internal/config"
)

// NewCommand is the root of the qim binary.
func NewCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "qim",
		Short: "Q-IM server processes",
		Long: `qim runs the Q-IM server processes, one service per process (qim <service>), or every service in
one process (qim all, for demos). Each service is configured only by QIM_* environment variables;
qim <service> --help lists them with their defaults, and docs/config.md is the full reference.
A QIM_* variable that no Q-IM program reads refuses to start every command (a typo would
otherwise run on a default you believe you changed).`,
		SilenceUsage: true,
	}
	for _, p := range programs() {
		root.AddCommand(serviceCmd(p))
	}
	root.AddCommand(allCmd())
	cmdline.Setup(root, cmdline.RefuseUnknownEnv(CheckEnviron))
	return root
}

func serviceCmd(p program) *cobra.Command {
	return &cobra.Command{
		Use:   p.name,
		Short: p.short,
		Long:  p.entity + ": " + p.long + "\n\n" + config.Help(p.vars),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return p.run(cmd.Context(), newLogger(p.name))
		},
	}
}

func allCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "all",
		Short: "Run every service in one process (demos; production runs one service per process)",
		Long: `Runs the writer, mailbox, fanout, session and gateway in one process, each configured from the same
environment as its own subcommand (see qim <service> --help; the gateway needs QIM_WRITER_ADDRS,
QIM_MAILBOX_ADDRS and QIM_SESSION_ADDRS pointing at the others). Any service stopping stops them all.
The HistoryArchiver is not included (it needs a CQL node): run qim archiver beside it.

The services still call each other over gRPC, so the internal RPC boundary applies: mTLS with one
certificate for the process (qimctl certs dev --one-process writes all.env), or, for a demo on
loopback, QIM_RPC_PLAINTEXT_LOOPBACK=1 (then qimctl membership cannot call GroupAdmin).

Example:
  eval "$(qim-gate stack up)"; QIM_RPC_PLAINTEXT_LOOPBACK=1 QIM_TOKEN_SECRET=... qim all`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			g, ctx := errgroup.WithContext(cmd.Context())
			for _, p := range programs() {
				if p.notInAll {
					continue
				}
				g.Go(func() error { return p.run(ctx, newLogger(p.name)) })
			}
			return g.Wait()
		},
	}
}

// CheckEnviron refuses QIM_* variables that no Q-IM program reads, naming each with the nearest
// known name or the variable that replaced it.
func CheckEnviron(environ []string) error {
	return config.CheckEnviron(environ, knownVars(), renamed)
}

// CheckEnvironAlso is CheckEnviron for a program that also reads the names in also (the
// harness's binaries: gates/harnessvars).
func CheckEnvironAlso(environ []string, also []string) error {
	known := knownVars()
	for _, n := range also {
		known = append(known, config.Var{Name: n})
	}
	return config.CheckEnviron(environ, known, renamed)
}

// knownVars is every variable of every service and tool.
func knownVars() []config.Var {
	var all []config.Var
	for _, p := range programs() {
		all = append(all, p.vars...)
	}
	for _, t := range toolVars {
		all = append(all, t.Var)
	}
	return all
}

func newLogger(service string) *slog.Logger {
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("proc", service)
}

// Execute runs the root command with ctx and returns the process exit code.
func Execute(ctx context.Context) int {
	// go-redis prints every failed dial of its pool through its own logger (18 lines for one
	// wrong address); the services report an unreachable Redis themselves, once per attempt, as
	// a structured line naming the dependency (lifecycle.Await), so the library's lines only bury it.
	redis.SetLogger(quietRedisLog{})
	return cmdline.Execute(ctx, NewCommand(), os.Stderr)
}

// quietRedisLog drops go-redis's internal log lines.
type quietRedisLog struct{}

func (quietRedisLog) Printf(context.Context, string, ...any) {}
