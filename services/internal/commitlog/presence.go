package commitlog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qim-dev/qim/contract"
)

const (
	defaultPresenceClientID = "qim-presence-producer"
	defaultPresenceBuffered = 4096
	defaultPresenceDelivery = 5 * time.Second
	presenceMaxRecordBytes  = 4096 // a PresenceEntry is under 200 bytes; anything larger is a bug
)

// ErrPresenceFull is returned by PresenceProducer.Produce when the buffer is full: the entry is
// not written, and the caller counts it (entries are hints, ADR-0027).
var ErrPresenceFull = errors.New("commitlog: presence producer buffer full")

// PresenceConfig configures a ConnectionNode's producer of qim.presence.
type PresenceConfig struct {
	Brokers  []string
	Security []kgo.Opt // SASL and TLS (storeauth.Kafka.Opts); nil: plaintext
	// Topic defaults to contract.TopicPresence.
	Topic string
	// ClientID defaults to "qim-presence-producer".
	ClientID string
	// MaxBufferedRecords bounds entries not yet acknowledged, default 4096. At the bound Produce
	// fails at once with ErrPresenceFull instead of blocking a login or a disconnect.
	MaxBufferedRecords int
	// DeliveryTimeout fails an entry not acknowledged within it, default 5 s.
	DeliveryTimeout time.Duration
	// Requests, when set, counts the producer's Kafka requests (qim_kafka_requests_total).
	Requests *RequestMetrics
}

// PresenceProducer writes PresenceEntry records to qim.presence, partition chosen by the caller
// (the user's mailbox shard).
//
// Invariants: Produce never blocks (a full buffer is ErrPresenceFull); entries of one key reach
// their partition in the order Produce was called (idempotent producer, one partition per key),
// which is what lets a gateway's offline entry never overtake its own online entry.
//
// Rejected: DispatchProducer's all-or-nothing batches. Presence entries are independent hints;
// a login waits for its own entry only, and a disconnect for nothing.
type PresenceProducer struct {
	topic string
	cl    *kgo.Client
}

// NewPresenceProducer validates cfg and creates the client without contacting a broker.
func NewPresenceProducer(cfg PresenceConfig) (*PresenceProducer, error) {
	if cfg.DeliveryTimeout == 0 {
		cfg.DeliveryTimeout = defaultPresenceDelivery
	}
	p := producerConfig{brokers: cfg.Brokers, security: cfg.Security, topic: cfg.Topic, clientID: cfg.ClientID, buffered: cfg.MaxBufferedRecords,
		maxRecord: presenceMaxRecordBytes, delivery: cfg.DeliveryTimeout, idempotent: true, requests: cfg.Requests}
	if err := p.validate("presence", contract.TopicPresence, defaultPresenceClientID, defaultPresenceBuffered,
		defaultPresenceDelivery); err != nil {
		return nil, err
	}
	opts := append(p.kgoOpts(), kgo.MaxBufferedRecords(p.buffered)) // the last option wins: no 2× slack, TryProduce fails at the bound
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("commitlog: presence producer: %w", err)
	}
	return &PresenceProducer{topic: p.topic, cl: cl}, nil
}

// Produce enqueues one entry (Partition, Key, Value) and calls done with its outcome, from
// franz-go's goroutine: done must not block. A full buffer calls done with ErrPresenceFull
// before Produce returns.
func (p *PresenceProducer) Produce(ctx context.Context, r Record, done func(error)) {
	kr := &kgo.Record{Topic: p.topic, Partition: r.Partition, Key: r.Key, Value: r.Value}
	p.cl.TryProduce(ctx, kr, func(kr *kgo.Record, err error) {
		if errors.Is(err, kgo.ErrMaxBuffered) {
			err = ErrPresenceFull
		} else if err != nil {
			err = fmt.Errorf("commitlog: presence to %s[%d]: %w", kr.Topic, kr.Partition, err)
		}
		done(err)
	})
}

// Ready verifies through this producer's client that qim.presence exists with exactly shards
// partitions, each led, compacted (see CheckCompacted), and that the producer id is loaded.
func (p *PresenceProducer) Ready(ctx context.Context, shards int) error {
	if err := checkProducerReady(ctx, p.cl, topicCheck{topic: p.topic, partitions: shards,
		needBytes: presenceMaxRecordBytes, idempotent: true}); err != nil {
		return err
	}
	return checkCompacted(ctx, kadm.NewClient(p.cl), p.topic)
}

// Topic is the topic entries go to.
func (p *PresenceProducer) Topic() string { return p.topic }

// presenceCloseFlush bounds Close's flush: a gateway stopping for good must get the offline
// entries of its drained sessions out, or MailboxNodes keep pushing to an address that is gone
// until it boots again.
const presenceCloseFlush = 2 * time.Second

// Close flushes buffered entries (at most presenceCloseFlush) and releases the client.
func (p *PresenceProducer) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), presenceCloseFlush)
	_ = p.cl.Flush(ctx) // best effort: what is not out by then fails, and the next boot ends it
	cancel()
	p.cl.Close()
}

// NotCompactedError: a topic that must be compacted deletes by retention, so a consumer that
// loads it from the start would miss the entries of sessions older than the retention.
type NotCompactedError struct {
	Topic  string
	Policy string
}

func (e *NotCompactedError) Error() string {
	return fmt.Sprintf("commitlog: %s has cleanup.policy=%q, want compact (create it with --config cleanup.policy=compact)",
		e.Topic, e.Policy)
}

// CheckCompacted verifies that topic's cleanup.policy is exactly compact.
func (a *Admin) CheckCompacted(ctx context.Context, topic string) error {
	return checkCompacted(ctx, a.adm, topic)
}

func checkCompacted(ctx context.Context, adm *kadm.Client, topic string) error {
	policy, _, err := topicConfig(ctx, adm, topic, "cleanup.policy")
	if err != nil {
		return fmt.Errorf("commitlog: %w", err)
	}
	if policy != "compact" {
		return &NotCompactedError{Topic: topic, Policy: policy}
	}
	return nil
}
