package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/stack"
)

type stackOptions struct {
	root    string
	withCQL bool
	json    bool
	shards  int
	project string
}

func newStackCmd() *cobra.Command {
	o := &stackOptions{}
	cmd := &cobra.Command{
		Use:   "stack",
		Short: "Start, stop and garbage-collect isolated qim-it-* server stacks",
	}
	cmd.PersistentFlags().StringVar(&o.root, "projects-dir", stack.ProjectRoot(), "directory holding the qim-it-* project directories (--root is a repository root in every other command)")
	cmd.AddCommand(newStackUpCmd(o), newStackDownCmd(o), newStackGCCmd(o))
	return cmd
}

func newStackUpCmd(o *stackOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a stack and leave it running; print its endpoints",
		Long: `Starts two Redis instances and one Kafka KRaft node (and a Cassandra node with --with-cql)
on free loopback ports in a new qim-it-<id> project directory, waits until each is ready,
prints the endpoints and exits, leaving the servers running. Stop them with
'qim-gate stack down --project NAME'.

Examples:
  qim-gate stack up
  qim-gate stack up --with-cql --json > endpoints.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s := stack.NewProcess(stack.WithRoot(o.root), stack.WithCQL(o.withCQL), stack.WithDispatchShards(o.shards),
				stack.WithDetached(true), stack.WithProgress(os.Stderr))
			if err := s.Up(cmd.Context()); err != nil {
				_ = s.Down(cmd.Context())
				return err
			}
			return printEndpoints(cmd.OutOrStdout(), cmd.ErrOrStderr(), s.Endpoints(), o.json)
		},
	}
	cmd.Flags().BoolVar(&o.withCQL, "with-cql", false, "also start a Cassandra node (tens of seconds on 2 cores)")
	cmd.Flags().BoolVar(&o.json, "json", false, "print endpoints as JSON instead of env lines")
	cmd.Flags().IntVar(&o.shards, "dispatch-shards", contract.MailboxShardsDefault, "partitions of qim.dispatch (mailbox shard count)")
	return cmd
}

// printEndpoints writes JSON, or the QIM_* lines a service reads (every name one a service
// accepts, so the output can be exported before starting one); the project and its directory,
// which no service reads, go to info as a comment.
func printEndpoints(w, info io.Writer, ep stack.Endpoints, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(ep)
	}
	fmt.Fprintf(info, "# stack %s in %s; stop it with: qim-gate stack down --project %s\n", ep.Project, ep.Dir, ep.Project)
	lines := []string{
		"QIM_REDIS_ADDR=" + ep.RedisCore,
		"QIM_MAILBOX_REDIS_ADDR=" + ep.RedisMailbox,
		"QIM_KAFKA_BROKERS=" + strings.Join(ep.KafkaBrokers, ","),
		fmt.Sprintf("QIM_MAILBOX_SHARD_COUNT=%d", ep.DispatchShards),
	}
	if ep.CQL != "" {
		lines = append(lines, "QIM_CQL_HOSTS="+ep.CQL)
	}
	_, err := fmt.Fprintln(w, strings.Join(lines, "\n"))
	return err
}

func newStackDownCmd(o *stackOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "down --project NAME",
		Short: "Stop a stack's recorded processes and remove its project directory",
		Long: `Stops exactly the processes recorded in the project's pid files (process groups; never by
name) and removes the project directory.

Example:
  qim-gate stack down --project qim-it-1a2b3c`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.project == "" {
				return fmt.Errorf("qim-gate: --project is required (see the project field of 'stack up')")
			}
			return stack.DownProject(o.root, o.project)
		},
	}
	cmd.Flags().StringVar(&o.project, "project", "", "project name (qim-it-<id>)")
	return cmd
}

func newStackGCCmd(o *stackOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "gc",
		Short: "Remove qim-it-* project directories whose recorded processes are all gone",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			removed, err := stack.GC(o.root)
			for _, r := range removed {
				fmt.Fprintln(cmd.OutOrStdout(), "removed", r)
			}
			return err
		},
	}
}
