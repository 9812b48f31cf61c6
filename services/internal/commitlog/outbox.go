package commitlog

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qim-dev/qim/contract"
)

// OutboxProducer publishes committed messages to the Outbox (contract.TopicOutbox), the step
// between RECORDED and OUTBOXED of the writer's commit.
//
// Invariants: every record goes to partition 0 of a one-partition topic (the Outbox order is the
// order fanout and the archiver see), with acks=all and an idempotent producer, keyed by the
// 16-byte message_id; every record handed to Produce gets exactly one done call, with its offset
// or an error, including on Close; at most MaxBufferedRecords are unacknowledged at once.
//
// How: franz-go's promise-based Produce (no goroutine per record; promises run serially on one
// franz-go goroutine, so done must be quick and must not block on this producer); a bounded
// recordBuffer in front gives cancellable back-pressure; records carry a detached context so one
// caller's cancellation never fails other callers' records (see recordBuffer).
//
// Not exactly-once: idempotence covers franz-go's own retries only. A record cancelled in flight
// (DeliveryTimeout) or published while the caller's state mark failed is re-published by the
// caller's retry, and the Outbox then holds it twice under the same key. That is allowed;
// downstream convergence by message_id / dispatch_id is the uniqueness boundary.
//
// Rejected: a transactional producer (one transaction per record measured ~100 msg/s:
// docs/adr/0012-fanout-without-kafka-transactions.md) and a synchronous produce per request (no
// batching across concurrent commits).
type OutboxProducer struct {
	cfg OutboxConfig
	cl  *kgo.Client
	buf *recordBuffer
}

// NewOutboxProducer validates cfg and creates the client. It does not contact a broker: call
// Ready before serving.
func NewOutboxProducer(cfg OutboxConfig) (*OutboxProducer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	pc := cfg.producer()
	cl, err := kgo.NewClient(pc.kgoOpts()...)
	if err != nil {
		return nil, fmt.Errorf("commitlog: outbox producer: %w", err)
	}
	return &OutboxProducer{cfg: cfg, cl: cl, buf: newRecordBuffer(cfg.MaxBufferedRecords)}, nil
}

// Produce publishes one record asynchronously; done receives its Outbox offset or an error.
// key must be the non-zero 16-byte message_id; value is the serialized CommittedEnvelope. The
// caller must not modify key or value until done runs.
//
// ctx bounds only the wait for buffer room; once buffered, the record lives until acknowledged,
// failed by DeliveryTimeout, or failed by Close. done may run on the caller's goroutine when the
// record is rejected before buffering (bad key, too large, ctx ended, closed); otherwise it runs
// on franz-go's promise goroutine and must not block.
func (p *OutboxProducer) Produce(ctx context.Context, key, value []byte, done func(offset int64, err error)) {
	if err := p.admit(key, value); err != nil {
		done(-1, err)
		return
	}
	if err := p.buf.admit(ctx); err != nil {
		done(-1, fmt.Errorf("commitlog: outbox produce: waiting for buffer room: %w", err))
		return
	}
	rec := &kgo.Record{Topic: p.cfg.Topic, Partition: 0, Key: key, Value: value}
	p.cl.Produce(context.WithoutCancel(ctx), rec, func(r *kgo.Record, err error) {
		defer p.buf.release()
		if err != nil {
			done(-1, fmt.Errorf("commitlog: outbox produce to %s[0]: %w", p.cfg.Topic, err))
			return
		}
		done(r.Offset, nil)
	})
	p.buf.handedOff()
}

// ProduceSync publishes one record and waits for its acknowledgement. If ctx ends first it
// returns an error wrapping ErrOutcomeUnknown: the record may still be published, so the
// caller resumes the commit rather than reporting failure (and leaves key and value untouched).
// An error without ErrOutcomeUnknown is definite: the record is not in the log from this call.
func (p *OutboxProducer) ProduceSync(ctx context.Context, key, value []byte) (int64, error) {
	type result struct {
		off int64
		err error
	}
	ch := make(chan result, 1)
	p.Produce(ctx, key, value, func(off int64, err error) { ch <- result{off, err} })
	select {
	case r := <-ch:
		return r.off, r.err
	case <-ctx.Done():
		select {
		case r := <-ch:
			return r.off, r.err
		default:
			return -1, fmt.Errorf("%w: %w", ErrOutcomeUnknown, ctx.Err())
		}
	}
}

// admit rejects records that can never be published, before they take buffer room.
func (p *OutboxProducer) admit(key, value []byte) error {
	id, err := contract.U128FromBytes(key)
	if err != nil || id.IsZero() {
		return fmt.Errorf("%w (got %d bytes)", ErrBadKey, len(key))
	}
	if n := len(key) + len(value); n > p.cfg.MaxRecordBytes {
		return &RecordTooLargeError{Size: n, Max: p.cfg.MaxRecordBytes}
	}
	return nil
}

// Ready verifies through this producer's client that a broker answers, the topic exists with
// exactly one partition that has a leader, its max.message.bytes holds MaxRecordBytes, the
// produce connection is open and the idempotent producer id is loaded. ErrTopicMissing and
// *PartitionCountError report the two configuration mistakes a deployment can make.
func (p *OutboxProducer) Ready(ctx context.Context) error {
	return checkProducerReady(ctx, p.cl, topicCheck{
		topic: p.cfg.Topic, partitions: 1,
		needBytes: int64(p.cfg.MaxRecordBytes + recordOverhead), idempotent: true,
	})
}

// Flush waits until every buffered record is acknowledged or failed, or ctx ends.
func (p *OutboxProducer) Flush(ctx context.Context) error {
	if err := p.cl.Flush(ctx); err != nil {
		return fmt.Errorf("commitlog: outbox flush: %w", err)
	}
	return nil
}

// BufferedRecords is the number of records handed to Produce and not yet acknowledged or
// failed: the producer's queue depth.
func (p *OutboxProducer) BufferedRecords() int { return p.buf.depth() }

// MaxRecordBytes is the largest key+value Produce accepts; the writer rejects larger messages
// before reserving a commit.
func (p *OutboxProducer) MaxRecordBytes() int { return p.cfg.MaxRecordBytes }

// Topic is the topic records go to.
func (p *OutboxProducer) Topic() string { return p.cfg.Topic }

// Close fails every record not yet acknowledged and returns after each of their done callbacks
// ran with an error (nothing is dropped silently), then Produce fails with ErrClosed. Call Flush
// first to publish what is buffered.
func (p *OutboxProducer) Close() { p.buf.close(p.cl.Close) }
