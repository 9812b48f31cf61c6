// Command qimctl is the Q-IM operator tool. main only wires the subcommands; each lives in its own
// file with an options struct bound to its flags.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/qim-dev/qim/services"
	"github.com/qim-dev/qim/services/cmdline"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cmdline.Execute(ctx, newRootCmd(), os.Stderr)
	stop()
	os.Exit(code)
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "qimctl",
		Short: "Q-IM operator tool",
		Long: `qimctl is the operator's tool for a running Q-IM deployment: it mints development tokens,
audits that every committed message reached every mailbox, changes group membership through the
ConversationWriter's GroupAdmin (admin mTLS), creates and checks the CQL history archive, manages
the Kafka topics, writes the development certificate set, and probes a service's /healthz.

Each command takes its addresses from flags, or else from the QIM_* variables the services read
(QIM_KAFKA_BROKERS, QIM_REDIS_ADDR, QIM_MAILBOX_REDIS_ADDR, QIM_CQL_HOSTS, QIM_TOKEN_SECRET), so an
operator's service environment is enough. Secrets are read from the environment or a file, never
from a flag's value. Exit status: 0 done, 1 a failed verdict (an audit found a problem), 2 the
command could not run.`,
		Example: `  QIM_TOKEN_SECRET=... qimctl token issue --user 42 --device phone-1
  qimctl audit --brokers 127.0.0.1:9092 --mailbox-redis 127.0.0.1:6380 --since 1h
  qimctl healthz http://127.0.0.1:9100/healthz
  qimctl cql migrate --cql-hosts 127.0.0.1:9042 --replication-factor 1`,
	}
	root.AddCommand(newTokenCmd(), newRevokeCmd(), newAdminCmd(), newAuditCmd(), newMembershipCmd(), newCQLCmd(), newHistoryCmd(), newCertsCmd(),
		newKafkaCmd(), newHealthzCmd(&healthzOptions{}))
	cmdline.Setup(root, cmdline.RefuseUnknownEnv(services.CheckEnviron))
	return root
}
