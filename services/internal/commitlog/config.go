package commitlog

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qim-dev/qim/contract"
)

// Bounds of the producer knobs. They are not contract constants: they only keep a typo from
// turning into an unbounded buffer or a linger that alone eats the SEND_ACK budget.
const (
	maxLinger = 50 * time.Millisecond // a third of contract.SLOSendAckP99; anything above is a typo
	// minDeliveryTimeout is franz-go's own lower bound for RecordDeliveryTimeout.
	minDeliveryTimeout = time.Second
	// recordOverhead is what Kafka's batch and record framing add around one key+value (batch
	// header 61 bytes, record header ≤ 21 bytes, plus a margin); the topic's max.message.bytes
	// must hold MaxRecordBytes plus this.
	recordOverhead = 512
	// maxFetchMinBytes bounds WithFetchMinBytes: franz-go's default FetchMaxBytes is 50 MiB, and
	// a gather target near it would only ever end by the max wait.
	maxFetchMinBytes = 16 << 20
)

// Defaults filled by Validate.
const (
	defaultOutboxBuffered    = 8192
	defaultDispatchBuffered  = 16384
	defaultMaxBufferedBytes  = 64 << 20
	defaultOutboxDelivery    = 5 * time.Second
	defaultDispatchDelivery  = 10 * time.Second
	defaultMaxRecordBytes    = 1_000_000
	defaultOutboxClientID    = "qim-outbox-producer"
	defaultDispatchClientID  = "qim-dispatch-producer"
	defaultConsumerClientID  = "qim-partition-consumer"
	defaultAdminClientID     = "qim-commitlog-admin"
	defaultConsumerFetchWait = 500 * time.Millisecond
)

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("commitlog: invalid config")

// OutboxConfig configures the writer's Outbox producer. Zero values take the documented
// default; values that cannot be right are rejected by Validate.
type OutboxConfig struct {
	// Brokers are the seed brokers (host:port). Required.
	Brokers []string
	// Security are the SASL and TLS options of the brokers (storeauth.Kafka.Opts); nil:
	// plaintext without SASL.
	Security []kgo.Opt
	// Topic defaults to contract.TopicOutbox. Only tests and migrations point elsewhere; Ready
	// still requires exactly one partition, because the Outbox order is the commit order.
	Topic string
	// ClientID is the Kafka client.id, default "qim-outbox-producer" (appears in broker metrics).
	ClientID string
	// Linger is how long a partition waits for more records before a produce request is cut.
	// Default 0: a record goes out as soon as the connection has room (at most 5 idempotent
	// requests in flight), and records arriving meanwhile pile into the next request, so
	// batching happens under load without a timer. Measured (outbox_bench_test.go, 1 KiB
	// values, one local broker, 2 shared cores, warm JVM): 32 concurrent synchronous producers
	// got p50/p99 0.9/2.9 ms and 32k rec/s at linger 0 against 1.6/2.5 ms and 20k rec/s at 1 ms;
	// one producer 0.28/0.45 ms against 1.5/2.2 ms; pipelined 191k against 142k rec/s. Max 50 ms.
	Linger time.Duration
	// MaxBufferedRecords bounds records handed to Produce and not yet acknowledged, default
	// 8192. A full buffer makes Produce wait (cancellable by its context): this is the
	// writer's back-pressure, exported as a queue-depth gauge through BufferedRecords.
	MaxBufferedRecords int
	// MaxBufferedBytes bounds the same buffer by size, default 64 MiB. Unlike the record bound
	// it is enforced inside franz-go, so a Produce waiting on it is released only by
	// acknowledgements or DeliveryTimeout, not by its context.
	MaxBufferedBytes int
	// MaxRecordBytes bounds key+value of one record, default 1,000,000 (what a topic created
	// with Kafka's default max.message.bytes accepts). Larger values fail at once with
	// *RecordTooLargeError instead of after a broker round trip; Ready checks that the topic's
	// max.message.bytes holds it. Raise both together to carry 4 MiB bodies.
	MaxRecordBytes int
	// DeliveryTimeout fails a record not acknowledged within it, default 5 s (below the 7 s
	// unavailability budget, contract.UnavailableDetectMax), minimum 1 s. In-flight records
	// may be failed too (franz-go's AllowIdempotentProduceCancellation): the caller then
	// resumes the commit and may publish a duplicate, which the contract allows; without it an
	// idempotent producer waits for a dead broker indefinitely.
	DeliveryTimeout time.Duration
	// Requests, when set, counts the producer's Kafka requests (qim_kafka_requests_total).
	Requests *RequestMetrics
}

// Validate fills defaults and rejects impossible values.
func (c *OutboxConfig) Validate() error {
	p := c.producer()
	if err := p.validate("outbox", contract.TopicOutbox, defaultOutboxClientID,
		defaultOutboxBuffered, defaultOutboxDelivery); err != nil {
		return err
	}
	c.Topic, c.ClientID, c.MaxBufferedRecords, c.MaxBufferedBytes = p.topic, p.clientID, p.buffered, p.bufferedBytes
	c.MaxRecordBytes, c.DeliveryTimeout = p.maxRecord, p.delivery
	return nil
}

func (c *OutboxConfig) producer() producerConfig {
	return producerConfig{c.Brokers, c.Security, c.Topic, c.ClientID, c.Linger, c.MaxBufferedRecords,
		c.MaxBufferedBytes, c.MaxRecordBytes, c.DeliveryTimeout, true, c.Requests}
}

// DispatchConfig configures the FanoutCoordinator's dispatch producer; fields as in
// OutboxConfig unless noted.
type DispatchConfig struct {
	Brokers  []string
	Security []kgo.Opt
	// Topic defaults to contract.TopicDispatch.
	Topic string
	// ClientID defaults to "qim-dispatch-producer".
	ClientID string
	// Linger defaults to 0. The fanout batch cycle waits for every ack before committing its
	// source offset, so a linger is paid once per batch on the critical path; records of one
	// ProduceBatch call are enqueued back to back and share requests anyway.
	Linger time.Duration
	// MaxBufferedRecords defaults to 16384 (a 512-record Outbox batch of 1,000-member groups can
	// plan 512 × 64 dispatches; enqueueing then simply waits for acks to free room).
	MaxBufferedRecords int
	MaxBufferedBytes   int
	MaxRecordBytes     int
	// DeliveryTimeout defaults to 10 s: fanout is off the SEND_ACK path, and a failed batch is
	// replayed whole, so a longer wait costs only lag.
	DeliveryTimeout time.Duration
	// DisableIdempotence turns off the idempotent producer (default: idempotent). Without it a
	// protocol retry can duplicate a dispatch inside the log; mailbox converges duplicates by
	// dispatch_id + payload_digest, so this trades duplicates for one less round trip at
	// startup and a slightly shorter batch acknowledgement wait (0.1–0.3 ms of P50 per batch
	// measured here; docs/adr/0017-dispatch-producer-batch-and-idempotence.md). Without
	// idempotence franz-go keeps one produce request in flight per broker, so a partition is
	// never reordered; with it, up to five, kept in order by sequence numbers.
	DisableIdempotence bool
	// Requests, when set, counts the producer's Kafka requests (qim_kafka_requests_total).
	Requests *RequestMetrics
}

// Validate fills defaults and rejects impossible values.
func (c *DispatchConfig) Validate() error {
	p := c.producer()
	if err := p.validate("dispatch", contract.TopicDispatch, defaultDispatchClientID,
		defaultDispatchBuffered, defaultDispatchDelivery); err != nil {
		return err
	}
	c.Topic, c.ClientID, c.MaxBufferedRecords, c.MaxBufferedBytes = p.topic, p.clientID, p.buffered, p.bufferedBytes
	c.MaxRecordBytes, c.DeliveryTimeout = p.maxRecord, p.delivery
	return nil
}

func (c *DispatchConfig) producer() producerConfig {
	return producerConfig{c.Brokers, c.Security, c.Topic, c.ClientID, c.Linger, c.MaxBufferedRecords,
		c.MaxBufferedBytes, c.MaxRecordBytes, c.DeliveryTimeout, !c.DisableIdempotence, c.Requests}
}

// producerConfig is the validated common part of both producers.
type producerConfig struct {
	brokers       []string
	security      []kgo.Opt
	topic         string
	clientID      string
	linger        time.Duration
	buffered      int
	bufferedBytes int
	maxRecord     int
	delivery      time.Duration
	idempotent    bool
	requests      *RequestMetrics
}

func (p *producerConfig) validate(what, topic, clientID string, buffered int, delivery time.Duration) error {
	if len(p.brokers) == 0 {
		return fmt.Errorf("%w: %s producer needs at least one broker", ErrConfig, what)
	}
	if p.linger < 0 || p.linger > maxLinger {
		return fmt.Errorf("%w: %s linger %v not in [0, %v]", ErrConfig, what, p.linger, maxLinger)
	}
	if p.buffered < 0 || p.bufferedBytes < 0 || p.maxRecord < 0 {
		return fmt.Errorf("%w: %s buffer bounds must not be negative", ErrConfig, what)
	}
	if p.delivery != 0 && p.delivery < minDeliveryTimeout {
		return fmt.Errorf("%w: %s delivery timeout %v below %v", ErrConfig, what, p.delivery, minDeliveryTimeout)
	}
	p.topic = orDefault(p.topic, topic)
	p.clientID = orDefault(p.clientID, clientID)
	p.buffered = orDefault(p.buffered, buffered)
	p.bufferedBytes = orDefault(p.bufferedBytes, defaultMaxBufferedBytes)
	p.maxRecord = orDefault(p.maxRecord, defaultMaxRecordBytes)
	p.delivery = orDefault(p.delivery, delivery)
	if p.maxRecord > p.bufferedBytes {
		return fmt.Errorf("%w: %s max record bytes %d above max buffered bytes %d", ErrConfig, what, p.maxRecord, p.bufferedBytes)
	}
	return nil
}

// kgoOpts are the franz-go options of a producer. The kgo record bound is twice ours: our slots
// are released inside the promise, a moment before franz-go forgets the record, and that moment
// must never block a Produce whose context was detached.
func (p *producerConfig) kgoOpts() []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(p.brokers...),
		kgo.ClientID(p.clientID),
		kgo.DefaultProduceTopic(p.topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(p.linger),
		kgo.MaxBufferedRecords(2 * p.buffered),
		kgo.MaxBufferedBytes(p.bufferedBytes),
		kgo.ProducerBatchMaxBytes(int32(p.maxRecord + recordOverhead)),
		kgo.RecordDeliveryTimeout(p.delivery),
	}
	opts = append(opts, p.requests.opts(p.clientID)...)
	opts = append(opts, p.security...)
	if p.idempotent {
		opts = append(opts, kgo.AllowIdempotentProduceCancellation())
	} else {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	return opts
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
