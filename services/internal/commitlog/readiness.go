package commitlog

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicCheck is what a producer's readiness requires of its topic.
type topicCheck struct {
	topic      string
	partitions int   // exact partition count the contract requires
	needBytes  int64 // max.message.bytes the topic must allow
	idempotent bool  // also require a loaded producer id
}

// checkProducerReady is the readiness of a producer, asked through the producer's own client so
// that "ready" proves this client can reach a broker, not that some other client could:
//
//  1. a metadata request sent to a broker now (not franz-go's metadata cache): the topic exists,
//     has exactly the required partition count, and every partition has a leader and no error;
//  2. the topic's max.message.bytes holds the largest record the producer accepts;
//  3. a produce connection to every partition leader is open;
//  4. for an idempotent producer, the producer id is loaded (InitProducerID). franz-go loads it
//     lazily before the first produce; on a fresh broker that first load can wait on the
//     transaction coordinator for seconds, which would otherwise land on the first SEND_ACKs.
//
// Nothing is produced: a probe record would be an Outbox record without a commit behind it.
func checkProducerReady(ctx context.Context, cl *kgo.Client, c topicCheck) error {
	leaders, err := checkTopicMetadata(ctx, cl, c.topic, c.partitions)
	if err != nil {
		return err
	}
	if err := checkMessageSize(ctx, kadm.NewClient(cl), c.topic, c.needBytes); err != nil {
		return err
	}
	if err := cl.EnsureProduceConnectionIsOpen(ctx, leaders...); err != nil {
		return fmt.Errorf("commitlog: ready: produce connection to the leaders of %s: %w", c.topic, err)
	}
	if c.idempotent {
		if _, _, err := cl.ProducerID(ctx); err != nil {
			return fmt.Errorf("commitlog: ready: idempotent producer id: %w", err)
		}
	}
	return nil
}

// checkTopicMetadata returns the distinct partition leaders of topic after checking it exists
// with exactly want partitions, each led and error-free.
func checkTopicMetadata(ctx context.Context, cl *kgo.Client, topic string, want int) ([]int32, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	req.AllowAutoTopicCreation = false // a readiness probe must never create the topic it checks
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("commitlog: ready: metadata for %s: %w", topic, err)
	}
	if len(resp.Brokers) == 0 {
		return nil, fmt.Errorf("commitlog: ready: metadata for %s lists no brokers", topic)
	}
	var td *kmsg.MetadataResponseTopic
	for i := range resp.Topics {
		if t := resp.Topics[i].Topic; t != nil && *t == topic {
			td = &resp.Topics[i]
		}
	}
	if td == nil {
		return nil, fmt.Errorf("%w: %s (absent from metadata)", ErrTopicMissing, topic)
	}
	if err := kerr.ErrorForCode(td.ErrorCode); err != nil {
		if errors.Is(err, kerr.UnknownTopicOrPartition) {
			return nil, fmt.Errorf("%w: %s", ErrTopicMissing, topic)
		}
		return nil, fmt.Errorf("commitlog: ready: topic %s: %w", topic, err)
	}
	if len(td.Partitions) != want {
		return nil, &PartitionCountError{Topic: topic, Want: want, Got: len(td.Partitions)}
	}
	seen := make(map[int32]bool, 1)
	var leaders []int32
	for _, p := range td.Partitions {
		if perr := kerr.ErrorForCode(p.ErrorCode); perr != nil || p.Leader < 0 {
			return nil, &PartitionNotReadyError{Topic: topic, Partition: p.Partition, Leader: p.Leader, Err: perr}
		}
		if !seen[p.Leader] {
			seen[p.Leader] = true
			leaders = append(leaders, p.Leader)
		}
	}
	return leaders, nil
}

// checkMessageSize compares the topic's effective max.message.bytes with need.
func checkMessageSize(ctx context.Context, adm *kadm.Client, topic string, need int64) error {
	const key = "max.message.bytes"
	val, found, err := topicConfig(ctx, adm, topic, key)
	if err != nil {
		return fmt.Errorf("commitlog: ready: %w", err)
	}
	if !found {
		return fmt.Errorf("commitlog: ready: %s reports no %s; cannot verify the record size limit", topic, key)
	}
	v, perr := strconv.ParseInt(val, 10, 64)
	if perr != nil {
		return fmt.Errorf("commitlog: ready: %s %s=%q: %w", topic, key, val, perr)
	}
	if v < need {
		return &MessageSizeLimitError{Topic: topic, TopicMax: v, Need: need}
	}
	return nil
}

// topicConfig is the effective value of one config key of topic, and whether the broker
// reported it.
func topicConfig(ctx context.Context, adm *kadm.Client, topic, key string) (string, bool, error) {
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return "", false, fmt.Errorf("describe %s configs: %w", topic, err)
	}
	rc, err := rcs.On(topic, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		return "", false, fmt.Errorf("describe %s configs: %w", topic, err)
	}
	for _, c := range rc.Configs {
		if c.Key == key {
			return c.MaybeValue(), true, nil
		}
	}
	return "", false, nil
}
