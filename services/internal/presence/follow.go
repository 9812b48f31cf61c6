package presence

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/commitlog"
)

const (
	// followPollMax bounds the entries handed to one Apply call (one lock hold in the owner).
	followPollMax = 1024
	// followFetchWait bounds an idle fetch. A fetch returns as soon as an entry arrives, so this
	// sets the idle broker requests of every follower (one per wait), not how soon an entry
	// applies; the consumer default (500 ms) would cost each gateway and MailboxNode two
	// requests a second for a topic that is quiet between logins.
	followFetchWait = 5 * time.Second
)

// From says where a Follower starts in each partition.
type From int

const (
	// FromStart loads the compacted log: a MailboxNode needs every online device of its shards.
	FromStart From = iota
	// FromEnd reads only new entries: a gateway kicks its own sessions, which are all newer
	// than its start.
	FromEnd
)

// Hooks are the owner's side of a Follower. Both are called from the Follower's goroutine.
type Hooks struct {
	Apply func([]Entry) // entries in log order per partition; the slice is reused after return
	Bad   func(error)   // an undecodable record, skipped (presence is a hint; see Decode)
}

// Follower reads qim.presence partitions and hands the entries to its owner.
//
// Invariants: Loaded turns true only after every partition's entries up to the log end seen at
// start were applied, and never turns false; a record is applied once per Follower.
//
// Rejected: a consumer group. The partitions are the owner's shards (a MailboxNode) or all of
// them (a gateway), fixed by configuration, as for qim.dispatch.
type Follower struct {
	c      *commitlog.PartitionConsumer
	target map[int32]int64 // log end at start, per partition not yet loaded
	loaded atomic.Bool
	hooks  Hooks
}

// Follow checks qim.presence (exactly shards partitions, compacted) and opens a consumer of the
// given partitions (all when none are given). security are the brokers' SASL and TLS options
// (nil: plaintext). Nothing is read until Run.
func Follow(ctx context.Context, brokers []string, security []kgo.Opt, shards contract.ShardCount, from From, hooks Hooks,
	partitions []int32, opts ...commitlog.ConsumerOption) (*Follower, error) {
	adm, err := commitlog.NewAdmin(brokers, commitlog.AdminSecurity(security))
	if err != nil {
		return nil, fmt.Errorf("presence: %w", err)
	}
	defer adm.Close()
	bounds, err := adm.Watermarks(ctx, contract.TopicPresence)
	if err != nil {
		return nil, fmt.Errorf("presence: %w", err)
	}
	if len(bounds) != int(shards) {
		return nil, &commitlog.PartitionCountError{Topic: contract.TopicPresence, Want: int(shards), Got: len(bounds)}
	}
	if err := adm.CheckCompacted(ctx, contract.TopicPresence); err != nil {
		return nil, err
	}
	if len(partitions) == 0 {
		for p := range bounds {
			partitions = append(partitions, p)
		}
	}
	starts := make(map[int32]int64, len(partitions))
	f := &Follower{target: map[int32]int64{}, hooks: hooks}
	for _, p := range partitions {
		b, ok := bounds[p]
		if !ok {
			return nil, fmt.Errorf("presence: %s has no partition %d", contract.TopicPresence, p)
		}
		starts[p] = b.High
		if from == FromStart {
			starts[p] = b.Low
			if b.High > b.Low {
				f.target[p] = b.High
			}
		}
	}
	f.loaded.Store(len(f.target) == 0)
	opts = append([]commitlog.ConsumerOption{commitlog.WithClientID("qim-presence"), commitlog.WithCompactedTopic(),
		commitlog.WithFetchMaxWait(followFetchWait), commitlog.WithSecurity(security)}, opts...)
	if f.c, err = commitlog.NewPartitionConsumer(brokers, contract.TopicPresence, starts, opts...); err != nil {
		return nil, fmt.Errorf("presence: %w", err)
	}
	return f, nil
}

// Loaded reports whether the entries present at start have all been applied.
func (f *Follower) Loaded() bool { return f.loaded.Load() }

// Run applies entries until ctx ends (nil) or the log fails (the error; the owner stops or
// restarts, as it does for its other consumers).
func (f *Follower) Run(ctx context.Context) error {
	var batch []Entry
	for {
		recs, err := f.c.Poll(ctx, followPollMax)
		if ctx.Err() != nil {
			return nil //nolint:nilerr // shutdown
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("presence: %s: %w", contract.TopicPresence, err)
		}
		batch = batch[:0]
		for _, r := range recs {
			e, _, derr := Decode(r.Value)
			if derr != nil {
				if f.hooks.Bad != nil {
					f.hooks.Bad(fmt.Errorf("%s[%d]@%d: %w", contract.TopicPresence, r.Partition, r.Offset, derr))
				}
				continue
			}
			batch = append(batch, e)
		}
		if len(batch) > 0 {
			f.hooks.Apply(batch)
		}
		f.advance(recs)
	}
}

// advance drops partitions whose start-time log end has been reached.
func (f *Follower) advance(recs []commitlog.Record) {
	if f.loaded.Load() {
		return
	}
	for _, r := range recs {
		if t, ok := f.target[r.Partition]; ok && r.Offset+1 >= t {
			delete(f.target, r.Partition)
		}
	}
	if len(f.target) == 0 {
		f.loaded.Store(true)
	}
}

// Close releases the consumer.
func (f *Follower) Close() { f.c.Close() }
