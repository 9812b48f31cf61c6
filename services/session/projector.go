package session

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/shardset"
)

// logConsumer is what the projector needs of commitlog.PartitionConsumer.
type logConsumer interface {
	Poll(ctx context.Context, max int) ([]commitlog.Record, error)
}

// projector applies the owned partitions of the dispatch log to the session lists.
//
// Invariants: only the owned partitions (Config.OwnedShards) are consumed, checkpointed and
// waited for; a record of another partition is refused, because its users are served by the
// instance that owns it and their snapshots' dirty markers would land here. Records of a
// partition are applied in log order, each in one script that writes every recipient and moves
// the partition's checkpoint from the value this process left it at to offset + 1 — so a
// checkpoint never passes a record with a recipient missing, instances owning disjoint shards
// never touch each other's checkpoints (one hash field per partition), and a second process
// projecting the same partition is fenced (QIMFENCED) instead of interleaving; any record that
// cannot be applied (bad record, fencing, Redis error) stops the projector, and the restart
// resumes from the checkpoints, which the scripts make safe (ZADD GT and max() are idempotent, a
// retry of an applied record is answered "already applied"). Dirty markers are set only after
// the script returned, so a snapshot that read Redis after a marker covers it. Caught up means
// every owned partition reached the log end seen at start-up.
//
// How: one PartitionConsumer statically assigned the owned partitions; each poll (up to PollMax
// records) becomes one Redis pipeline of one apply.lua call per 256 records, in poll order, which
// reads and writes the checkpoints once per call and each list key once (issue 41; one EVALSHA
// per record cost six commands and a Lua call per record); poll order keeps each partition's
// order.
//
// Rejected: a FIFO and a worker per partition as in the MailboxNode. A record here costs a few
// commands of one batch script with no push behind it, so one pipeline per poll keeps up with the log without 64
// goroutines; and a consumer group (rebalances would hand a partition to another process
// mid-batch, away from the snapshots of its users, and positions belong next to the lists they
// describe).
type projector struct {
	c       logConsumer
	st      *store
	topicID string
	pollMax int
	shards  contract.ShardCount
	owned   shardset.Set // sorted; the partitions consumed
	prev    []string     // checkpoint value this process left per partition ("" = none); run only
	next    []int64      // next offset per partition (owned ones only meaningful); run only
	target  []int64      // log end seen at start-up, per partition (owned ones only meaningful)
	caught  atomic.Bool
	mark    func(userKey, contract.ConversationID)
	m       *metrics
}

// run polls and applies until ctx ends (nil) or the projection must stop (an error naming the
// partition and offset).
func (p *projector) run(ctx context.Context) error {
	p.checkCaughtUp()
	for ctx.Err() == nil {
		recs, perr := p.c.Poll(ctx, p.pollMax)
		if ctx.Err() != nil {
			return nil //nolint:nilerr // shutdown; unapplied records replay from the checkpoints
		}
		if len(recs) > 0 {
			if err := p.apply(ctx, recs); err != nil {
				if ctx.Err() != nil {
					return nil //nolint:nilerr // cancelled mid-pipeline; checkpoints say where to resume
				}
				return err // the lifecycle logs it and stops the process
			}
		}
		if perr != nil {
			return fmt.Errorf("session: dispatch log: %w", perr)
		}
		p.checkCaughtUp()
	}
	return nil
}

func (p *projector) checkCaughtUp() {
	if p.caught.Load() {
		return
	}
	for _, part := range p.owned {
		if p.next[part] < p.target[part] {
			return
		}
	}
	p.caught.Store(true)
}

// apply validates every record of a poll, then writes them in one pipeline.
func (p *projector) apply(ctx context.Context, recs []commitlog.Record) error {
	calls := make([]applyCall, 0, len(recs))
	for _, r := range recs {
		if r.Partition < 0 || !p.owned.Contains(uint32(r.Partition)) {
			return &RecordError{Partition: r.Partition, Offset: r.Offset, Err: fmt.Errorf("%w: partition not owned", ErrBadDispatch)}
		}
		pr, err := decodeDispatch(r, p.shards)
		if err != nil {
			p.m.rejected.Inc()
			return &RecordError{Partition: r.Partition, Offset: r.Offset, Err: err}
		}
		c := applyCall{part: r.Partition, offset: r.Offset, prev: p.prev[r.Partition],
			next: strconv.FormatInt(r.Offset+1, 10), score: pr.activity.TimeMs(), conv: pr.conv, seq: pr.seq}
		for _, u := range pr.recipients {
			k := userKey{tenant: pr.tenant, user: contract.UserID(u)}
			c.lists = append(c.lists, listKey(k))
			c.touching = append(c.touching, k)
			if k.user == pr.sender {
				c.readKey = readKey(k) // sending a message marks the conversation read for the sender
			}
		}
		p.prev[r.Partition] = c.next // the partition's next record expects this value
		calls = append(calls, c)
	}
	start := time.Now()
	n, err := p.st.apply(ctx, p.topicID, calls)
	p.m.applyLatency.Observe(float64(time.Since(start).Microseconds()))
	p.m.batch.Observe(float64(len(calls)))
	p.m.applied.Add(float64(n))
	for _, c := range calls[:n] {
		for _, k := range c.touching {
			p.mark(k, c.conv)
		}
		p.next[c.part] = c.offset + 1
	}
	var fe *FencedError
	if errors.As(err, &fe) {
		p.m.fenced.Inc()
	}
	return err
}
