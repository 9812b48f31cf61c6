package commitlog

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
)

// OffsetStore keeps one group's consumer positions in one topic with Kafka's offset commit API,
// without joining the group: fanout checkpoints its Outbox position under a group such as
// "qim-fanout" this way.
//
// Invariants: Commit returns nil only after the group coordinator acknowledged the position for
// that partition; the stored value is the offset of the NEXT record to process (Kafka's
// convention), so a restart neither repeats nor skips the last processed record; Fetch
// distinguishes "no position" from an error, because ValidateStart treats the two differently.
//
// How: kadm CommitOffsets / FetchOffsets with no member id and generation -1, which the broker
// accepts only while the group has no active members; if someone does run a consumer group under
// the same name, commits fail (the error is returned, never ignored).
//
// Rejected: committing through a group-consuming client (rebalances, heartbeats and a member id
// for a process that owns its partitions statically), and storing the position in Redis (fanout
// would then need its own fencing; the Outbox position belongs next to the Outbox).
type OffsetStore struct {
	adm   *kadm.Client
	group string
	topic string
}

// NewOffsetStore returns the store of group's positions in topic, using a's client.
func NewOffsetStore(a *Admin, group, topic string) (*OffsetStore, error) {
	if a == nil || group == "" || topic == "" {
		return nil, fmt.Errorf("%w: offset store needs an admin, a group and a topic", ErrConfig)
	}
	return &OffsetStore{adm: a.adm, group: group, topic: topic}, nil
}

// Commit stores next (the offset of the next record to process) for partition, synchronously.
func (s *OffsetStore) Commit(ctx context.Context, partition int32, next int64) error {
	if partition < 0 || next < 0 {
		return fmt.Errorf("commitlog: commit %s %s[%d] at %d: negative partition or offset", s.group, s.topic, partition, next)
	}
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: s.topic, Partition: partition, At: next, LeaderEpoch: -1})
	err := withRetry(ctx, func() error {
		resp, err := s.adm.CommitOffsets(ctx, s.group, os)
		if err != nil {
			return err
		}
		r, ok := resp.Lookup(s.topic, partition)
		if !ok {
			return errors.New("partition missing from the response")
		}
		return r.Err
	})
	if err != nil {
		return fmt.Errorf("commitlog: commit %s %s[%d] at %d: %w", s.group, s.topic, partition, next, err)
	}
	return nil
}

// CommitAll stores the positions of several partitions (partition → the offset of the next record
// to process) in one request, synchronously; it fails when any partition's commit failed.
func (s *OffsetStore) CommitAll(ctx context.Context, next map[int32]int64) error {
	var os kadm.Offsets
	for p, off := range next {
		if p < 0 || off < 0 {
			return fmt.Errorf("commitlog: commit %s %s[%d] at %d: negative partition or offset", s.group, s.topic, p, off)
		}
		os.Add(kadm.Offset{Topic: s.topic, Partition: p, At: off, LeaderEpoch: -1})
	}
	err := withRetry(ctx, func() error {
		resp, err := s.adm.CommitOffsets(ctx, s.group, os)
		if err != nil {
			return err
		}
		for p := range next {
			r, ok := resp.Lookup(s.topic, p)
			if !ok {
				return fmt.Errorf("partition %d missing from the response", p)
			}
			if r.Err != nil {
				return fmt.Errorf("partition %d: %w", p, r.Err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("commitlog: commit %s positions in %s: %w", s.group, s.topic, err)
	}
	return nil
}

// Fetch returns the stored position of partition: (offset, true, nil) when one exists,
// (-1, false, nil) when the group never committed one, and an error when the coordinator could
// not answer.
func (s *OffsetStore) Fetch(ctx context.Context, partition int32) (int64, bool, error) {
	var (
		r  kadm.OffsetResponse
		ok bool
	)
	err := withRetry(ctx, func() error {
		resp, err := s.adm.FetchOffsets(ctx, s.group)
		if err != nil {
			return err
		}
		r, ok = resp.Lookup(s.topic, partition)
		if ok {
			return r.Err
		}
		return nil
	})
	if err != nil {
		return -1, false, fmt.Errorf("commitlog: fetch %s position in %s[%d]: %w", s.group, s.topic, partition, err)
	}
	if !ok || r.At < 0 {
		return -1, false, nil
	}
	return r.At, true, nil
}
