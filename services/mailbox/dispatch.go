package mailbox

// Mailbox dispatch: why it is built this way.
//
// One sequence per message per shard. A message reaches a MailboxShard as one GroupDispatch
// record in that shard's qim.dispatch partition, and its mailbox_seq is compose(shard_epoch,
// log_offset) of that record: stable across replays, because the log, not this process, assigns
// it. The log is at-least-once (a writer that published but failed to mark COMMITTED, a fanout
// batch replayed after a crash), so the same dispatch may appear at a later offset; the store
// recognises it by dispatch_id + payload_digest and reuses the FIRST record's mailbox_seq, so a
// device never sees one message at two positions. The same dispatch_id with a different digest
// means two different payloads claim one identity: the node stops rather than choose one.
//
// 64 lanes. The predecessor implementation kept a vector of 64 lane watermarks per shard because
// it materialized a large group dispatch in chunks, lane by lane, and needed "every lane complete
// up to offset N" (docs/adr/0003-mailbox-single-watermark-lex-members.md).
// Here a whole record — every entry, its identity and the watermark — is ONE Redis script, so a
// single contiguous watermark per shard is exact: it never passes a record whose entries are not
// all stored, and a reader bounded by it never sees half a record. contract.LaneCount stays fixed
// for the day a record is split again (ADR-0003). What the 64 lanes become here is 64 shard
// FIFOs: records of one partition are applied strictly in order by one worker; shards run in
// parallel, bounded by contract.MailboxMaterializePermits.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/failpoint"
	"github.com/qim-dev/qim/services/mailbox/mailboxstore"
)

// materializeTimeout bounds one pipeline. A timeout stops the node like any Redis error: the
// outcome is unknown, and the restart replays from the watermark, which the scripts make safe.
const materializeTimeout = 10 * time.Second

// materializer is the store call of the workers (mailboxstore.Store in production).
type materializer interface {
	Materialize(ctx context.Context, ms []mailboxstore.Materialization) ([]mailboxstore.Outcome, error)
}

// shardWorker applies one shard's records in log order.
//
// Invariants: records are applied in the order the lane delivers them, each with PrevOffset =
// the offset this worker applied last (or the watermark it started from), so the store's CAS
// proves no record was skipped and no other owner interfered; push happens only after the
// record's pipeline returned, i.e. after the entries and the watermark are in Redis; any failure
// ends the worker with a *ShardError (the node stops; nothing is retried in-process, because a
// restart replaying from the watermark is the one recovery path that is always correct).
//
// How: block for one record, take whatever else is waiting up to the batch limit, validate all,
// send them as one pipeline (one EVALSHA per record) under a global permit.
type shardWorker struct {
	lane     *lane
	epoch    uint16
	shards   contract.ShardCount
	store    materializer
	permits  chan struct{}
	batchMax int
	push     func([]*internalv1.PushTarget) // nil: push disabled
	m        *metrics
	log      *slog.Logger

	last    int64        // offset applied last (-1: none); worker goroutine only
	applied atomic.Int64 // mirror of last for readiness
	target  int64        // log end at start-up: caught up once last+1 >= target
	wmGauge interface{ Set(float64) }
}

func (w *shardWorker) caughtUp() bool { return w.applied.Load()+1 >= w.target }

func (w *shardWorker) run(ctx context.Context) error {
	batch := make([]commitlog.Record, 0, w.batchMax)
	for {
		batch = batch[:0]
		select {
		case <-ctx.Done():
			return nil
		case r := <-w.lane.fifo:
			batch = append(batch, r)
		}
		for len(batch) < w.batchMax && len(w.lane.fifo) > 0 {
			batch = append(batch, <-w.lane.fifo) // only this goroutine receives: cannot block
		}
		if err := w.apply(ctx, batch); err != nil {
			if ctx.Err() != nil && errors.Is(err, context.Canceled) {
				return nil // shutting down mid-call: the watermark says where to replay from
			}
			return err
		}
	}
}

// apply validates and materializes one batch, then hands the fresh records to push.
func (w *shardWorker) apply(ctx context.Context, recs []commitlog.Record) error {
	ms := make([]mailboxstore.Materialization, 0, len(recs))
	var targets [][]*internalv1.PushTarget
	prev := w.last
	for _, rec := range recs {
		d, tenant, err := decodeDispatch(rec, w.shards)
		if err != nil {
			w.m.rejected.Inc()
			return &ShardError{Shard: w.lane.shard, Offset: rec.Offset, Err: err}
		}
		m, ts, err := buildMaterialization(d, tenant, w.epoch, rec.Offset, prev, w.push != nil)
		if err != nil {
			w.m.rejected.Inc()
			return &ShardError{Shard: w.lane.shard, Offset: rec.Offset, Err: err}
		}
		ms, targets, prev = append(ms, m), append(targets, ts), rec.Offset
	}
	select {
	case w.permits <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	failpoint.Hit(failpoint.MailboxBeforeMaterialize)
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, materializeTimeout)
	outs, err := w.store.Materialize(cctx, ms)
	cancel()
	<-w.permits
	w.m.materialize.Observe(float64(time.Since(start).Microseconds()))
	w.m.batchSize.Observe(float64(len(ms)))
	w.account(recs, outs)
	if err != nil && ctx.Err() != nil {
		return ctx.Err() // shutting down: not a shard failure
	}
	if err != nil {
		return w.fail(recs[len(outs)].Offset, err)
	}
	failpoint.Hit(failpoint.MailboxAfterMaterialize)
	if w.push != nil {
		for i, o := range outs {
			if !o.Duplicate && !o.Retry { // a duplicate was pushed when it was first materialized
				w.push(targets[i])
			}
		}
	}
	return nil
}

// account records the durable prefix of a batch.
func (w *shardWorker) account(recs []commitlog.Record, outs []mailboxstore.Outcome) {
	for i, o := range outs {
		w.last = recs[i].Offset
		result := "fresh"
		if o.Duplicate {
			result = "duplicate"
		}
		w.m.materialized.WithLabelValues(result).Inc()
	}
	if len(outs) > 0 {
		w.applied.Store(w.last)
		w.wmGauge.Set(float64(w.last))
	}
}

// fail classifies a materialization error into its invariant counter and stops the shard.
func (w *shardWorker) fail(offset int64, err error) error {
	var ce *mailboxstore.ConflictError
	var fe *mailboxstore.FencedError
	switch {
	case errors.As(err, &ce):
		w.m.conflicts.Inc()
	case errors.As(err, &fe):
		w.m.fenced.Inc()
	case errors.Is(err, mailboxstore.ErrInvalid), errors.Is(err, mailboxstore.ErrCorrupt):
		w.m.rejected.Inc()
	}
	w.log.Error("mailbox: shard stopped", "shard", w.lane.shard, "offset", offset, "err", err)
	return &ShardError{Shard: w.lane.shard, Offset: offset, Err: fmt.Errorf("materialize: %w", err)}
}

func shardLabel(s uint32) string { return strconv.FormatUint(uint64(s), 10) }
