package commitlog

import (
	"context"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qim-dev/qim/contract"
)

// DispatchProducer publishes the FanoutCoordinator's GroupDispatch records to qim.dispatch, one
// partition per mailbox shard chosen by the caller.
//
// Invariants: ProduceBatch returns nil only when every record of the batch is acknowledged
// with acks=all; it returns only after every record it enqueued has an outcome, so the caller
// may reuse the batch's buffers afterwards; a record is never re-partitioned (the partition is
// the mailbox shard, and mailbox rejects a dispatch found on another shard).
//
// How: all records are enqueued back to back through franz-go's promise API (one produce request
// per broker carries every partition that has data, not one request per partition as the
// predecessor's librdkafka producer did), then one WaitGroup waits for every promise. The first
// error wins.
//
// All-or-nothing is the caller's side of the contract: on any error some records of the batch may
// be in the log and others not, and the caller replays the WHOLE batch (and does not commit its
// source offset); dispatch_id + payload_digest make the replay converge in the mailbox. Nothing
// here is transactional, and duplicates across a replay are expected.
//
// Rejected: a Kafka transaction per batch (docs/adr/0012-fanout-without-kafka-transactions.md: the
// atomicity it buys is already provided by replay + convergence, at the price of a coordinator
// round trip per batch) and per-partition ProduceSync calls (one round trip per shard per batch;
// compare the predecessor's 27 ms batch ack wait in
// docs/adr/0017-dispatch-producer-batch-and-idempotence.md).
type DispatchProducer struct {
	cfg DispatchConfig
	cl  *kgo.Client
	buf *recordBuffer
}

// NewDispatchProducer validates cfg and creates the client without contacting a broker.
func NewDispatchProducer(cfg DispatchConfig) (*DispatchProducer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	pc := cfg.producer()
	cl, err := kgo.NewClient(pc.kgoOpts()...)
	if err != nil {
		return nil, fmt.Errorf("commitlog: dispatch producer: %w", err)
	}
	return &DispatchProducer{cfg: cfg, cl: cl, buf: newRecordBuffer(cfg.MaxBufferedRecords)}, nil
}

// batchWait collects the outcomes of one ProduceBatch call.
type batchWait struct {
	wg    sync.WaitGroup
	mu    sync.Mutex
	first error
}

func (w *batchWait) fail(err error) {
	w.mu.Lock()
	if w.first == nil {
		w.first = err
	}
	w.mu.Unlock()
}

// ProduceBatch enqueues every record (Partition = mailbox shard, Key, Value) and waits until
// each is acknowledged or failed; on success each record's Offset is set. It returns the first
// error; the caller then replays the whole batch. ctx stops the enqueueing of the remaining
// records (an error) but not the wait for records already enqueued, which is bounded by
// DeliveryTimeout. Records are validated before anything is enqueued.
func (d *DispatchProducer) ProduceBatch(ctx context.Context, recs []Record) error {
	for i := range recs {
		r := &recs[i]
		if r.Partition < 0 {
			return fmt.Errorf("commitlog: dispatch record %d: negative partition %d", i, r.Partition)
		}
		if n := len(r.Key) + len(r.Value); n > d.cfg.MaxRecordBytes {
			return fmt.Errorf("commitlog: dispatch record %d for %s[%d]: %w", i, d.cfg.Topic, r.Partition,
				&RecordTooLargeError{Size: n, Max: d.cfg.MaxRecordBytes})
		}
	}
	w := &batchWait{}
	rctx := context.WithoutCancel(ctx)
	for i := range recs {
		if err := d.buf.admit(ctx); err != nil {
			w.fail(fmt.Errorf("commitlog: dispatch batch: enqueued %d of %d records: %w", i, len(recs), err))
			break
		}
		w.wg.Add(1)
		r := &recs[i]
		kr := &kgo.Record{Topic: d.cfg.Topic, Partition: r.Partition, Key: r.Key, Value: r.Value}
		d.cl.Produce(rctx, kr, func(kr *kgo.Record, err error) {
			if err != nil {
				w.fail(fmt.Errorf("commitlog: dispatch to %s[%d]: %w", kr.Topic, kr.Partition, err))
			} else {
				r.Offset = kr.Offset
			}
			d.buf.release() // before Done: when ProduceBatch returns, its records left the buffer
			w.wg.Done()
		})
		d.buf.handedOff()
	}
	w.wg.Wait()
	return w.first
}

// Ready verifies through this producer's client that qim.dispatch exists with exactly shards
// partitions (the validated mailbox shard count writer, fanout and mailbox share), each with a
// leader, that its max.message.bytes holds MaxRecordBytes, that produce connections to the
// leaders are open and, when idempotent, that the producer id is loaded.
func (d *DispatchProducer) Ready(ctx context.Context, shards int) error {
	n, err := contract.NewShardCount(shards)
	if err != nil {
		return fmt.Errorf("commitlog: dispatch ready: %w", err)
	}
	return checkProducerReady(ctx, d.cl, topicCheck{
		topic: d.cfg.Topic, partitions: int(n),
		needBytes: int64(d.cfg.MaxRecordBytes + recordOverhead), idempotent: !d.cfg.DisableIdempotence,
	})
}

// BufferedRecords is the number of enqueued records without an outcome yet (queue depth).
func (d *DispatchProducer) BufferedRecords() int { return d.buf.depth() }

// Topic is the topic records go to.
func (d *DispatchProducer) Topic() string { return d.cfg.Topic }

// Close fails records without an outcome (their batch returns an error), waits for their
// promises and releases the client.
func (d *DispatchProducer) Close() { d.buf.close(d.cl.Close) }
