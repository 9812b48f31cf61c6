package mailbox

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/qim-dev/qim/services/internal/commitlog"
)

// logConsumer is what the router needs of commitlog.PartitionConsumer.
type logConsumer interface {
	Poll(ctx context.Context, max int) ([]commitlog.Record, error)
	Pause(partitions ...int32)
	Resume(partitions ...int32)
}

// lane is one owned shard's bounded FIFO between the router and the shard's worker. Partition
// = shard. fifo holds up to contract.MailboxShardFIFOCapacity records; spill holds records the
// router already polled while the FIFO was full (franz-go has moved past them, so they cannot be
// handed back), at most one poll's worth, because the partition is paused at the first of them.
type lane struct {
	shard   uint32
	fifo    chan commitlog.Record
	spill   []commitlog.Record // owned by the router goroutine
	paused  bool               // owned by the router goroutine
	spilled atomic.Int64       // len(spill), for the depth gauge
}

func newLane(shard uint32, capacity int) *lane {
	return &lane{shard: shard, fifo: make(chan commitlog.Record, capacity)}
}

func (l *lane) depth() int { return len(l.fifo) + int(l.spilled.Load()) }

// router is the central dispatch-log loop: one PartitionConsumer statically assigned the owned
// partitions, one FIFO lane per shard.
//
// Invariants: records of one partition reach its lane in log order (a record goes to the spill
// whenever the spill is not empty, and the spill drains into the FIFO in order); a full FIFO
// pauses ONLY its partition, counted in qim_mailbox_dispatch_partition_paused_total, and the
// partition resumes once the spill is drained and the FIFO is at most half full (hysteresis, so a
// saturated shard does not flap); nothing is ever dropped; a record from a partition this node
// does not own, or any consumer error, stops the loop (Run returns it; the unadvanced watermarks
// make the restart replay).
//
// How: Poll blocks until records arrive (fetch max wait); while a lane is paused, Poll is bounded
// by idle so the spill is retried and the partition resumed without waiting for traffic on
// other partitions.
//
// Rejected: blocking on a full FIFO (the predecessor's first design). One hot shard then stalls all
// 64 partitions: the consumer spent 99 % of its wall time in enqueue
// (docs/adr/0007-mailbox-router-pauses-full-partition.md). Also rejected: one consumer per shard
// (64 clients, 64 fetch sessions, and no shared fetch batching).
type router struct {
	c       logConsumer
	lanes   map[int32]*lane
	order   []*lane
	pollMax int
	idle    time.Duration
	m       *metrics
}

func newRouter(c logConsumer, lanes []*lane, pollMax int, idle time.Duration, m *metrics) *router {
	r := &router{c: c, lanes: make(map[int32]*lane, len(lanes)), order: lanes, pollMax: pollMax, idle: idle, m: m}
	for _, l := range lanes {
		r.lanes[int32(l.shard)] = l
	}
	return r
}

// run polls until ctx ends (nil) or the log fails (error).
func (r *router) run(ctx context.Context) error {
	for ctx.Err() == nil {
		pctx, cancel := ctx, context.CancelFunc(func() {})
		if r.anyPaused() {
			pctx, cancel = context.WithTimeout(ctx, r.idle)
		}
		recs, err := r.c.Poll(pctx, r.pollMax)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil //nolint:nilerr // shutdown; unmaterialized records replay from the watermark
		case err != nil && !errors.Is(err, context.DeadlineExceeded):
			return fmt.Errorf("mailbox: dispatch log: %w", err)
		}
		for _, rec := range recs {
			l := r.lanes[rec.Partition]
			if l == nil {
				return fmt.Errorf("mailbox: dispatch log returned partition %d, which this node does not own", rec.Partition)
			}
			r.offer(l, rec)
		}
		r.drain()
	}
	return nil
}

func (r *router) anyPaused() bool {
	for _, l := range r.order {
		if l.paused {
			return true
		}
	}
	return false
}

func (r *router) offer(l *lane, rec commitlog.Record) {
	if len(l.spill) == 0 {
		select {
		case l.fifo <- rec:
			return
		default:
		}
	}
	l.spill = append(l.spill, rec)
	l.spilled.Store(int64(len(l.spill)))
	if !l.paused {
		r.c.Pause(int32(l.shard))
		l.paused = true
		r.m.paused.Inc()
	}
}

// drain moves spilled records into their FIFOs and resumes partitions that have room again.
func (r *router) drain() {
	for _, l := range r.order {
		if !l.paused {
			continue
		}
		n := 0
		for n < len(l.spill) && tryPush(l.fifo, l.spill[n]) {
			n++
		}
		if n > 0 {
			l.spill = append(l.spill[:0], l.spill[n:]...)
			l.spilled.Store(int64(len(l.spill)))
		}
		if len(l.spill) == 0 && len(l.fifo) <= cap(l.fifo)/2 {
			r.c.Resume(int32(l.shard))
			l.paused = false
			r.m.resumed.Inc()
		}
	}
}

func tryPush(ch chan commitlog.Record, rec commitlog.Record) bool {
	select {
	case ch <- rec:
		return true
	default:
		return false
	}
}
