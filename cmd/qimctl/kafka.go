package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qim-dev/qim/services"
	"github.com/qim-dev/qim/services/inspect"
)

// kafkaTopicsOptions are the flags of `qimctl kafka topics`. Brokers and shards fall back to the
// variables the services read, so a service's environment is enough.
type kafkaTopicsOptions struct {
	brokers  []string
	shards   int
	replicas int
	timeout  time.Duration
}

func newKafkaCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "kafka", Short: "The Kafka-protocol log (Apache Kafka or Redpanda)"}
	cmd.AddCommand(newKafkaTopicsCmd(&kafkaTopicsOptions{}))
	return cmd
}

func newKafkaTopicsCmd(o *kafkaTopicsOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "topics",
		Short: "Create the log's topics if missing and check their layout",
		Long: `Creates qim.outbox (1 partition), qim.dispatch (one partition per mailbox shard) and the compacted
qim.presence (one partition per mailbox shard) where they are missing, then waits until every
partition has a leader. Safe to run again and beside running services. A topic that exists with
another partition count is refused: the services would refuse it too, and repartitioning a log
loses its order.

Examples:
  qimctl kafka topics --brokers 127.0.0.1:9092 --shards 64 --replicas 1
  QIM_KAFKA_BROKERS=k1:9092,k2:9092,k3:9092 qimctl kafka topics --replicas 3`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runKafkaTopics(cmd.Context(), o, os.Getenv, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.brokers, "brokers", nil, "seed brokers (default: QIM_KAFKA_BROKERS)")
	f.IntVar(&o.shards, "shards", 0, "mailbox shards = partitions of qim.dispatch and qim.presence (default: QIM_MAILBOX_SHARD_COUNT, else 64)")
	f.IntVar(&o.replicas, "replicas", 3, "replication factor of topics created now (1 for one dev broker)")
	f.DurationVar(&o.timeout, "timeout", 2*time.Minute, "give up after this long (a broker still starting is retried)")
	return cmd
}

func runKafkaTopics(ctx context.Context, o *kafkaTopicsOptions, getenv func(string) string, out io.Writer) error {
	brokers := o.brokers
	if len(brokers) == 0 && getenv("QIM_KAFKA_BROKERS") != "" {
		brokers = strings.Split(getenv("QIM_KAFKA_BROKERS"), ",")
	}
	if len(brokers) == 0 {
		return fmt.Errorf("qimctl kafka topics: no brokers: pass --brokers or set QIM_KAFKA_BROKERS")
	}
	shards := o.shards
	if shards == 0 {
		shards = 64
		if v := getenv("QIM_MAILBOX_SHARD_COUNT"); v != "" {
			if _, err := fmt.Sscanf(v, "%d", &shards); err != nil {
				return fmt.Errorf("qimctl kafka topics: QIM_MAILBOX_SHARD_COUNT=%q: %w", v, err)
			}
		}
	}
	auth, err := services.StoreAuthFrom(getenv)
	if err != nil {
		return fmt.Errorf("qimctl kafka topics: %w", err)
	}
	security, err := auth.Kafka.Opts()
	if err != nil {
		return fmt.Errorf("qimctl kafka topics: %w", err)
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.DialTimeout(2 * time.Second)}, security...)...)
	if err != nil {
		return fmt.Errorf("qimctl kafka topics: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	return ensureTopicsRetrying(ctx, kadm.NewClient(cl), shards, o.replicas, out)
}

// ensureTopicsRetrying retries while the broker is still starting (no metadata, no leader
// yet); a layout that cannot be repaired ends it at once.
func ensureTopicsRetrying(ctx context.Context, adm *kadm.Client, shards, replicas int, out io.Writer) error {
	for {
		err := inspect.EnsureTopics(ctx, adm, shards, replicas)
		if err == nil {
			for _, t := range inspect.Topics(shards) {
				fmt.Fprintf(out, "%s: %d partitions, compacted=%v\n", t.Name, t.Partitions, t.Compacted)
			}
			return nil
		}
		if errors.Is(err, inspect.ErrTopicLayout) {
			return fmt.Errorf("qimctl kafka topics: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("qimctl kafka topics: gave up: %w", err)
		case <-time.After(time.Second):
		}
	}
}
