package inspect

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/qim-dev/qim/contract"
)

// ErrTopicLayout marks a topic that exists with another partition count than the deployment's:
// the services would refuse it at start-up, and no tool can repair it without losing the log.
var ErrTopicLayout = errors.New("topic layout does not match the deployment")

// TopicSpec is one topic of a deployment's log.
type TopicSpec struct {
	Name       string
	Partitions int
	Compacted  bool
}

// Topics are the log's topics for a deployment of shards mailbox shards: the Outbox's single
// partition (one total order of commits), one dispatch partition per shard, and the compacted
// PresenceDirectory partitioned like the dispatches (ADR-0027), and the post-send feed a
// NotificationService given QIM_NOTIFY_FEED_TOPIC=qim.feed writes (ADR-0036; unused otherwise).
func Topics(shards int) []TopicSpec {
	return []TopicSpec{
		{Name: contract.TopicOutbox, Partitions: 1},
		{Name: contract.TopicDispatch, Partitions: shards},
		{Name: contract.TopicPresence, Partitions: shards, Compacted: true},
		{Name: contract.TopicFeed, Partitions: shards},
	}
}

// EnsureTopics creates every topic of Topics(shards) that is missing, with replicas replicas,
// and checks that every one has its partition count and a leader on each partition. It is safe
// to run again and beside running services. A topic with another partition count is an error
// wrapping ErrTopicLayout; a partition without a leader yet is a plain error (retry).
func EnsureTopics(ctx context.Context, adm *kadm.Client, shards, replicas int) error {
	if shards <= 0 || replicas <= 0 {
		return fmt.Errorf("services: topics: shards %d and replicas %d must be > 0", shards, replicas)
	}
	specs := Topics(shards)
	compact := "compact"
	for _, t := range specs {
		var configs map[string]*string
		if t.Compacted {
			configs = map[string]*string{"cleanup.policy": &compact}
		}
		resp, err := adm.CreateTopics(ctx, int32(t.Partitions), int16(replicas), configs, t.Name)
		if err != nil {
			return fmt.Errorf("services: create %s: %w", t.Name, err)
		}
		if r := resp[t.Name]; r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("services: create %s: %w (%s)", t.Name, r.Err, r.ErrMessage)
		}
	}
	names := make([]string, len(specs))
	for i, t := range specs {
		names[i] = t.Name
	}
	td, err := adm.ListTopics(ctx, names...)
	if err != nil {
		return fmt.Errorf("services: list topics: %w", err)
	}
	for _, t := range specs {
		d, ok := td[t.Name]
		if !ok || d.Err != nil {
			return fmt.Errorf("services: topic %s not visible yet (%v)", t.Name, d.Err)
		}
		if len(d.Partitions) != t.Partitions {
			return fmt.Errorf("%w: %s has %d partitions, want %d", ErrTopicLayout, t.Name, len(d.Partitions), t.Partitions)
		}
		for _, p := range d.Partitions {
			if p.Err != nil || p.Leader < 0 {
				return fmt.Errorf("services: %s[%d] has no leader yet (%v)", t.Name, p.Partition, p.Err)
			}
		}
	}
	return nil
}
