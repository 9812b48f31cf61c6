package writer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/qim-dev/qim/services/internal/rpc"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/services/internal/failpoint"
	"github.com/qim-dev/qim/services/internal/msgstore"
)

// call is one send travelling through the commit pipeline.
type call struct {
	cmd    *sendCmd
	ident  [36]byte
	commit msgstore.Commit
	start  time.Time
	staged time.Time // start of the current stage, for stage latency
	// done receives the outcome exactly once: an ACK (only from a COMMITTED commit) or an error.
	// It runs on a pipeline goroutine and must not block.
	done func(*qimv1.SendAck, error)
}

// committer is the commit pipeline of the ConversationWriter.
//
// Invariants: an ACK is produced only in finishMarks, after MarkCommitted succeeded for that very
// commit (or for a replay, from a commit the store reports COMMITTED); a commit whose outcome is
// not known stays in the store's recovery index and is finished by the recovery loop or by the
// client's retry, never re-planned from a new payload. Every queue is bounded: `in` by the
// gateway streams' permits, `marks` by the same total.
//
// How: one goroutine drains `in` and runs a whole batch of reserve_and_record scripts in one Redis
// pipeline, then hands each RECORDED commit to the Outbox producer without waiting; the producer's
// ack callback queues it on `marks`; a second goroutine drains `marks` and marks a whole batch
// COMMITTED in one pipeline, then completes the calls. Two round trips per batch, not per message,
// which is what makes appendfsync always affordable: Redis fsyncs once per event loop, not per
// command.
//
// Rejected: a goroutine per send awaiting each step in turn. Simpler, but each send then costs two
// Redis round trips of its own, and under appendfsync always the fsync per event-loop turn is paid
// by fewer commands; commit throughput was measured collapsing to 1,873/s that way
// (docs/adr/0005-batched-commit-pipeline.md).
type committer struct {
	store    commitStore
	out      outboxProducer
	ids      idIssuer
	m        *metrics
	log      *slog.Logger
	in       chan *call
	marks    chan *call
	slots    chan struct{} // global admission: a call holds one slot from submit to its answer
	batchMax int
	now      func() time.Time
	aud      *audiences // group audiences (envelopes of group records)
}

func newCommitter(store commitStore, out outboxProducer, ids idIssuer, m *metrics, log *slog.Logger, shards contract.ShardCount, batchMax, depth int) *committer {
	return &committer{
		store: store, out: out, ids: ids, m: m, log: log, batchMax: batchMax, now: failpoint.Now, aud: newAudiences(store, shards),
		in: make(chan *call, depth), marks: make(chan *call, depth), slots: make(chan struct{}, depth),
	}
}

// submit admits a call into the pipeline. Admission takes one of `depth` global slots, released
// when the call is answered; `in` and `marks` have room for every slot, so no stage ever blocks on
// a full queue — in particular the Outbox ack callback, which runs on the producer's goroutine and
// must never wait. When every slot is taken, submit waits (back-pressure to the gateway streams)
// or gives up with its context.
func (c *committer) submit(ctx context.Context, cl *call) error {
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	done := cl.done
	cl.done = func(ack *qimv1.SendAck, err error) {
		<-c.slots
		done(ack, err)
	}
	c.in <- cl // cannot block: len(in) ≤ slots taken ≤ cap(in)
	c.m.queueDepth.WithLabelValues("reserve").Set(float64(len(c.in)))
	return nil
}

// drain takes first plus whatever else is queued, up to batchMax, without waiting for more.
func drain(first *call, ch chan *call, batch []*call, max int) []*call {
	batch = append(batch[:0], first)
	for len(batch) < max {
		select {
		case cl := <-ch:
			batch = append(batch, cl)
		default:
			return batch
		}
	}
	return batch
}

// runReserve owns the reserve stage until ctx ends.
func (c *committer) runReserve(ctx context.Context) error {
	batch := make([]*call, 0, c.batchMax)
	for {
		select {
		case <-ctx.Done():
			return nil
		case first := <-c.in:
			batch = drain(first, c.in, batch, c.batchMax)
			c.reserveBatch(ctx, batch)
		}
	}
}

func (c *committer) reserveBatch(ctx context.Context, batch []*call) {
	intents := make([]msgstore.Intent, 0, len(batch))
	live := batch[:0:0]
	nowMs := c.now().UnixMilli()
	for _, cl := range batch {
		in, err := c.intent(cl, nowMs)
		if err != nil {
			c.fail(cl, "reserve", err)
			continue
		}
		intents, live = append(intents, in), append(live, cl)
	}
	if len(live) == 0 {
		return
	}
	c.m.batchSize.WithLabelValues("reserve").Observe(float64(len(live)))
	start := time.Now()
	var commits []msgstore.Commit
	var errs []error
	if failpoint.Armed(failpoint.WriterAfterReserve) {
		commits, errs = c.reserveTwoStep(ctx, intents)
	} else {
		commits, errs = c.store.ReserveAndRecord(ctx, intents)
	}
	c.m.stage.WithLabelValues("reserve").Observe(time.Since(start).Seconds())
	for i, cl := range live {
		if errs[i] != nil {
			c.fail(cl, "reserve", errs[i])
			continue
		}
		cl.commit = commits[i]
		c.advance(ctx, cl)
	}
}

// intent allocates the message id and builds the canonical record of a send.
func (c *committer) intent(cl *call, nowMs int64) (msgstore.Intent, error) {
	mid, err := c.ids.Next()
	if err != nil {
		return msgstore.Intent{}, fmt.Errorf("writer: issue message_id: %w", err)
	}
	rec, err := cl.cmd.record(mid)
	if err != nil {
		return msgstore.Intent{}, err
	}
	if n, limit := outboxBound(len(rec), cl.cmd.conversation.Kind() == contract.KindGroup), c.out.MaxRecordBytes(); n > limit {
		// Refused before reserve: a commit whose Outbox record the producer refuses would be in
		// history and answered UNAVAILABLE on every retry, never delivered.
		return msgstore.Intent{}, rpc.Refuse(contract.ErrCodePayloadTooLarge,
			"message of %d bytes (body %d) does not fit one Outbox record of %d bytes", n, len(cl.cmd.body), limit)
	}
	return msgstore.Intent{Key: cl.cmd.key(), Identity: cl.ident, MessageID: mid, Record: rec, NowMs: nowMs}, nil
}

// reserveTwoStep is the path an armed writer-after-reserve failpoint takes: RESERVED is made
// durable on its own so a crash can land between it and RECORDED.
func (c *committer) reserveTwoStep(ctx context.Context, intents []msgstore.Intent) ([]msgstore.Commit, []error) {
	commits, errs := make([]msgstore.Commit, len(intents)), make([]error, len(intents))
	for i, in := range intents {
		if in.Key.Conversation.Kind() == contract.KindGroup { // no two-step path: see msgstore.Reserve
			cs, es := c.store.ReserveAndRecord(ctx, intents[i:i+1])
			commits[i], errs[i] = cs[0], es[0]
			continue
		}
		commits[i], errs[i] = c.store.Reserve(ctx, in)
		if errs[i] == nil && commits[i].State == msgstore.StateReserved {
			failpoint.Hit(failpoint.WriterAfterReserve)
			commits[i], errs[i] = c.store.Record(ctx, in.Key)
		}
	}
	return commits, errs
}

// advance moves a reserved commit on according to its state: a COMMITTED replay is answered at
// once, RESERVED is recorded first, RECORDED goes to the Outbox.
func (c *committer) advance(ctx context.Context, cl *call) {
	switch cl.commit.State {
	case msgstore.StateCommitted:
		c.m.commits.WithLabelValues("replayed").Inc()
		c.complete(cl, cl.commit.CommittedAtMs)
		return
	case msgstore.StateReserved:
		cm, err := c.store.Record(ctx, cl.cmd.key())
		if err != nil {
			c.fail(cl, "record", err)
			return
		}
		cl.commit = cm
	}
	if cl.commit.State != msgstore.StateRecorded {
		c.fail(cl, "record", fmt.Errorf("writer: commit in unexpected state %q", cl.commit.State))
		return
	}
	if !cl.commit.Fresh {
		c.m.commits.WithLabelValues("resumed").Inc()
	}
	failpoint.Hit(failpoint.WriterAfterRecord)
	c.produce(ctx, cl)
}

// produce hands the envelope to the Outbox producer; the ack callback queues the mark.
func (c *committer) produce(ctx context.Context, cl *call) {
	env, err := c.envelopeOf(ctx, cl)
	if err != nil {
		c.fail(cl, "outbox", err)
		return
	}
	cl.staged = time.Now()
	mid := cl.commit.MessageID.Bytes()
	c.out.Produce(ctx, mid[:], env, func(_ int64, err error) {
		c.m.stage.WithLabelValues("outbox").Observe(time.Since(cl.staged).Seconds())
		if err != nil {
			c.fail(cl, "outbox", fmt.Errorf("writer: outbox produce: %w", err))
			return
		}
		failpoint.Hit(failpoint.WriterAfterOutbox)
		cl.staged = time.Now()
		c.marks <- cl // cannot block: len(marks) ≤ slots taken ≤ cap(marks)
	})
}

// runMarks owns the mark stage until ctx ends.
func (c *committer) runMarks(ctx context.Context) error {
	batch := make([]*call, 0, c.batchMax)
	reqs := make([]msgstore.MarkRequest, 0, c.batchMax)
	for {
		select {
		case <-ctx.Done():
			return nil
		case first := <-c.marks:
			batch = drain(first, c.marks, batch, c.batchMax)
			c.m.queueDepth.WithLabelValues("mark").Set(float64(len(c.marks)))
			reqs = c.markBatch(ctx, batch, reqs[:0])
		}
	}
}

func (c *committer) markBatch(ctx context.Context, batch []*call, reqs []msgstore.MarkRequest) []msgstore.MarkRequest {
	at := c.now().UnixMilli()
	for _, cl := range batch {
		reqs = append(reqs, msgstore.MarkRequest{Key: cl.cmd.key(), CommittedAtMs: at,
			Amend: cl.cmd.markAmendment(cl.commit.Seq, cl.commit.MessageID)})
	}
	c.m.batchSize.WithLabelValues("mark").Observe(float64(len(batch)))
	start := time.Now()
	errs := c.store.MarkCommitted(ctx, reqs)
	c.m.stage.WithLabelValues("mark").Observe(time.Since(start).Seconds())
	for i, cl := range batch {
		if errs[i] != nil {
			c.fail(cl, "mark", errs[i])
			continue
		}
		if cl.commit.Fresh {
			c.m.commits.WithLabelValues("fresh").Inc()
		}
		failpoint.Hit(failpoint.WriterBeforeAck)
		c.complete(cl, at)
	}
	return reqs
}

// complete answers a COMMITTED send. This is the only place an ACK is built.
func (c *committer) complete(cl *call, committedAtMs int64) {
	cmid := contract.U128(cl.cmd.cmid).Bytes()
	mid := cl.commit.MessageID.Bytes()
	cid := cl.cmd.conversation.Bytes()
	c.m.sendLatency.Observe(time.Since(cl.start).Seconds())
	cl.done(&qimv1.SendAck{
		ClientMessageId: cmid[:], MessageId: mid[:], ConversationId: cid[:],
		ConversationSeq: uint64(cl.commit.Seq), CommittedAtMs: committedAtMs,
	}, nil)
}

// fail answers a send whose commit did not complete. For anything but a refusal of the request
// itself the client's outcome is unknown (UNAVAILABLE) and its retry resumes the same intent.
func (c *committer) fail(cl *call, stage string, err error) {
	var re *rpc.RequestError
	switch {
	case errors.As(err, &re):
	case errors.Is(err, msgstore.ErrIdentityConflict):
		err = rpc.Refuse(contract.ErrCodeConflict, "client_message_id reused with different content")
	case errors.Is(err, msgstore.ErrNotMember), errors.Is(err, msgstore.ErrNoGroup):
		// One answer for both: a non-member learns nothing, not even whether the group exists.
		err = rpc.Refuse(contract.ErrCodeNotMember, "not a current member of this group")
	default:
		c.log.Warn("writer: commit stage failed", "stage", stage, "err", err)
	}
	c.m.failures.WithLabelValues(stage, rpc.CodeOf(err).String()).Inc()
	cl.done(nil, err)
}
