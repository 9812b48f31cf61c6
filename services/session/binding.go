package session

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/shardset"
)

// Checkpoint binding: why checkpoints carry the log's identity.
//
// A checkpoint is "the next offset of partition p". Offsets only mean something in the log that
// issued them: after a topic is deleted and recreated under the same name, or the service is
// pointed at another cluster, offset 1,234 names a different record or none at all. Resuming
// from it silently skips records (lost conversations) or stops on an out-of-range error at best.
// So the checkpoint hash is bound once to (cluster id, topic id, partition count) and every
// start compares the broker's current answer with it; a topic id that is absent or all zero (a
// broker without KIP-516) cannot prove anything and also refuses to start. The apply script
// checks the topic id again on every record, so a second process bound elsewhere cannot write
// through this binding either.

// describeTopic asks a broker now (not a metadata cache) for the cluster id, the topic id and
// the partition count of topic.
func describeTopic(ctx context.Context, brokers []string, security []kgo.Opt, topic string) (binding, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ClientID("qim-session-admin")}, security...)...)
	if err != nil {
		return binding{}, fmt.Errorf("session: kafka client: %w", err)
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	req.AllowAutoTopicCreation = false // never create the topic the projection checks
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return binding{}, fmt.Errorf("session: metadata of %s: %w", topic, err)
	}
	for _, t := range resp.Topics {
		if t.Topic == nil || *t.Topic != topic {
			continue
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			if errors.Is(err, kerr.UnknownTopicOrPartition) {
				return binding{}, fmt.Errorf("%w: %s", commitlog.ErrTopicMissing, topic)
			}
			return binding{}, fmt.Errorf("session: metadata of %s: %w", topic, err)
		}
		b := binding{topicID: hex.EncodeToString(t.TopicID[:]), partitions: len(t.Partitions)}
		if resp.ClusterID != nil {
			b.cluster = *resp.ClusterID
		}
		return b, nil
	}
	return binding{}, fmt.Errorf("%w: %s (absent from metadata)", commitlog.ErrTopicMissing, topic)
}

// zeroTopicID is a topic id a broker without KIP-516 reports.
const zeroTopicID = "00000000000000000000000000000000"

// checkLive validates what the broker reports before anything is bound to it.
func checkLive(topic string, live binding, wantPartitions int) error {
	switch {
	case len(live.topicID) != len(zeroTopicID) || live.topicID == zeroTopicID:
		return &TopicIDError{Topic: topic}
	case live.cluster == "":
		return &BindingError{Topic: topic, Field: "cluster_id", Stored: "(any)", Live: ""}
	case live.partitions != wantPartitions:
		return fmt.Errorf("session: refusing to start: %w",
			&commitlog.PartitionCountError{Topic: topic, Want: wantPartitions, Got: live.partitions})
	}
	return nil
}

// compareBinding returns a *BindingError for the first field where stored and live differ.
func compareBinding(topic string, stored, live binding) error {
	switch {
	case stored.cluster != live.cluster:
		return &BindingError{Topic: topic, Field: "cluster_id", Stored: stored.cluster, Live: live.cluster}
	case stored.topicID != live.topicID:
		return &BindingError{Topic: topic, Field: "topic_id", Stored: stored.topicID, Live: live.topicID}
	case stored.partitions != live.partitions:
		return &BindingError{Topic: topic, Field: "partitions", Stored: strconv.Itoa(stored.partitions),
			Live: strconv.Itoa(live.partitions)}
	}
	return nil
}

// startOffsets applies the start rule to every owned partition: a checkpoint must lie inside the
// log [low, high]; without one, only a log that still starts at 0 may be read from 0. Anything
// else is a *StartError (the operator decides; the code never guesses). Partitions owned by other
// instances are not judged: their checkpoints move under those instances while this one starts.
func startOffsets(cps []int64, bounds map[int32]commitlog.Bounds, owned shardset.Set) (map[int32]int64, error) {
	starts := make(map[int32]int64, len(owned))
	for _, s := range owned {
		p := int32(s)
		if int(p) >= len(cps) {
			return nil, fmt.Errorf("session: owned shard %d beyond the %d checkpointed partitions", p, len(cps))
		}
		b, ok := bounds[p]
		if !ok {
			return nil, fmt.Errorf("session: no offsets listed for partition %d", p)
		}
		start, err := commitlog.ValidateStart(cps[p], cps[p] >= 0, b)
		if err != nil {
			return nil, &StartError{Partition: p, Checkpoint: cps[p], Bounds: b, Err: err}
		}
		starts[p] = start
	}
	return starts, nil
}
