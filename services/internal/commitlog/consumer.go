package commitlog

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Record is one log record. Producers read Partition, Key and Value (and set Offset on
// success); a consumer fills every field.
type Record struct {
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Timestamp time.Time
}

// ConsumerOption tunes a PartitionConsumer.
type ConsumerOption func(*consumerConfig)

type consumerConfig struct {
	clientID     string
	fetchMaxWait time.Duration
	fetchMin     int32
	requests     *RequestMetrics
	compacted    bool
	security     []kgo.Opt
}

// WithFetchMaxWait sets how long the broker may hold an empty fetch, default 500 ms. A fetch
// returns as soon as data arrives, so this bounds idle round trips, not latency; lower values
// cost broker CPU, higher ones make Poll's context the only way out of an idle wait.
func WithFetchMaxWait(d time.Duration) ConsumerOption {
	return func(c *consumerConfig) { c.fetchMaxWait = d }
}

// WithFetchMinBytes sets how many bytes the broker gathers before it answers a fetch, waiting
// at most the fetch max wait (WithFetchMaxWait); default 1, an answer as soon as any record is
// there. A consumer off the delivery path (the SessionProjection, the HistoryArchiver) raises
// it with a short max wait, so that under load one fetch carries many records: the broker's
// cost is its request rate, not its bytes (docs/perf.md). On the delivery path it adds up to
// the max wait to every record's latency. At most 16 MiB.
func WithFetchMinBytes(n int32) ConsumerOption {
	return func(c *consumerConfig) { c.fetchMin = n }
}

// WithRequestMetrics counts the consumer's Kafka requests (qim_kafka_requests_total), default
// not counted.
func WithRequestMetrics(m *RequestMetrics) ConsumerOption {
	return func(c *consumerConfig) { c.requests = m }
}

// WithCompactedTopic reads a compacted topic (qim.presence): compaction removes records, so the
// first record of a partition may lie above its start offset, and Poll's exact-start check is
// off. Default off: on every other topic such a jump means records were lost to retention.
func WithCompactedTopic() ConsumerOption { return func(c *consumerConfig) { c.compacted = true } }

// WithSecurity adds the SASL and TLS options of the brokers (storeauth.Kafka.Opts). Default
// none: plaintext without SASL.
func WithSecurity(opts []kgo.Opt) ConsumerOption {
	return func(c *consumerConfig) { c.security = opts }
}

// WithClientID sets the Kafka client.id, default "qim-partition-consumer".
func WithClientID(id string) ConsumerOption { return func(c *consumerConfig) { c.clientID = id } }

// PartitionConsumer reads fixed partitions of one topic from explicit start offsets: the Outbox
// for fanout and the archiver, qim.dispatch shards for mailbox and session.
//
// Invariants: no consumer group, so no rebalance and no auto-commit (positions are the caller's,
// stored where the caller's durability rules say); read_committed isolation; offsets never reset
// silently: franz-go's reset is disabled (NoResetOffset), and because franz-go bounds an exact
// start offset into the log before the first fetch, Poll checks that the first record of every
// partition is exactly its start offset. Any partition error makes the consumer failed for good.
//
// How: kgo ConsumePartitions; Poll returns at most max records; Pause/Resume stop fetching a
// partition without losing buffered data (franz-go re-fetches it after Resume).
//
// Rejected: a consumer group with manual commits. A rebalance can hand a partition to another
// member mid-batch, and the group coordinator would become a second source of truth for
// positions that MailboxNode and SessionProjection keep next to their own data.
type PartitionConsumer struct {
	topic string
	cl    *kgo.Client
	adm   *kadm.Client
	parts []int32

	mu     sync.Mutex
	expect map[int32]int64 // start offset of partitions that have not returned a record yet
	failed error
}

// NewPartitionConsumer starts consuming topic's partitions from starts (partition → offset of the
// next record to read). Offsets must already be validated (ValidateStart): an offset outside the
// log surfaces as a *FetchError or *StartOffsetError from Poll, never as a jump.
func NewPartitionConsumer(brokers []string, topic string, starts map[int32]int64, opts ...ConsumerOption) (*PartitionConsumer, error) {
	cfg := consumerConfig{clientID: defaultConsumerClientID, fetchMaxWait: defaultConsumerFetchWait, fetchMin: 1}
	for _, o := range opts {
		o(&cfg)
	}
	switch {
	case len(brokers) == 0:
		return nil, fmt.Errorf("%w: consumer needs at least one broker", ErrConfig)
	case topic == "":
		return nil, fmt.Errorf("%w: consumer needs a topic", ErrConfig)
	case len(starts) == 0:
		return nil, fmt.Errorf("%w: consumer of %s needs at least one partition", ErrConfig, topic)
	case cfg.fetchMaxWait <= 0:
		return nil, fmt.Errorf("%w: fetch max wait must be positive", ErrConfig)
	case cfg.fetchMin < 1 || cfg.fetchMin > maxFetchMinBytes:
		return nil, fmt.Errorf("%w: fetch min bytes %d not in [1, %d]", ErrConfig, cfg.fetchMin, maxFetchMinBytes)
	}
	offsets := make(map[int32]kgo.Offset, len(starts))
	expect := make(map[int32]int64, len(starts))
	parts := make([]int32, 0, len(starts))
	for p, off := range starts {
		if p < 0 || off < 0 {
			return nil, fmt.Errorf("%w: %s[%d] start offset %d", ErrConfig, topic, p, off)
		}
		offsets[p] = kgo.NewOffset().At(off)
		if !cfg.compacted {
			expect[p] = off
		}
		parts = append(parts, p)
	}
	slices.Sort(parts)
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ClientID(cfg.clientID),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.ConsumeResetOffset(kgo.NoResetOffset()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(cfg.fetchMaxWait),
		kgo.FetchMinBytes(cfg.fetchMin),
	}, append(cfg.requests.opts(cfg.clientID), cfg.security...)...)...)
	if err != nil {
		return nil, fmt.Errorf("commitlog: consumer of %s: %w", topic, err)
	}
	return &PartitionConsumer{topic: topic, cl: cl, adm: kadm.NewClient(cl), parts: parts, expect: expect}, nil
}

// Poll waits until records are available or ctx ends and returns at most max records (max ≤ 0:
// all buffered), in offset order per partition. When ctx ends with nothing fetched it returns
// ctx's error.
//
// On a partition error Poll returns the records it took from healthy partitions together with
// the error: the client has moved past them, so the caller processes them, then closes this
// consumer and starts a new one from its durable positions. Every later Poll returns the same
// error.
func (c *PartitionConsumer) Poll(ctx context.Context, max int) ([]Record, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failed != nil {
		return nil, c.failed
	}
	fs := c.cl.PollRecords(ctx, max)
	var perr, ctxErr error
	fs.EachError(func(topic string, p int32, err error) {
		switch {
		case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
			ctxErr = err
		case errors.Is(err, kgo.ErrClientClosed):
			perr = cmp.Or(perr, ErrClosed)
		default:
			perr = cmp.Or[error](perr, &FetchError{Topic: topic, Partition: p, Err: err})
		}
	})
	out := make([]Record, 0, fs.NumRecords())
	bad := int32(-1)
	fs.EachRecord(func(r *kgo.Record) {
		if r.Partition == bad {
			return
		}
		if want, first := c.expect[r.Partition]; first {
			delete(c.expect, r.Partition)
			if r.Offset != want {
				// franz-go bounded an out-of-log start offset into the log: records were skipped
				// or the position lies beyond the end. Either way the caller's position is wrong.
				bad = r.Partition
				perr = cmp.Or[error](perr, &StartOffsetError{Topic: c.topic, Partition: r.Partition, Want: want, Got: r.Offset})
				return
			}
		}
		out = append(out, Record{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp})
	})
	if bad >= 0 {
		out = slices.DeleteFunc(out, func(r Record) bool { return r.Partition == bad })
	}
	if perr != nil {
		c.failed = perr
		return out, perr
	}
	if len(out) == 0 && ctxErr != nil {
		return nil, ctxErr
	}
	return out, nil
}

// Pause stops fetching the given partitions; records already buffered for them are kept back
// and fetched again after Resume, so pausing never skips or repeats a record.
func (c *PartitionConsumer) Pause(partitions ...int32) {
	c.cl.PauseFetchPartitions(map[string][]int32{c.topic: partitions})
}

// Resume restarts fetching paused partitions.
func (c *PartitionConsumer) Resume(partitions ...int32) {
	c.cl.ResumeFetchPartitions(map[string][]int32{c.topic: partitions})
}

// Watermarks returns the bounds of the consumed partitions, listed in one request per bound
// kind (all partitions at once, start and end concurrently).
func (c *PartitionConsumer) Watermarks(ctx context.Context) (map[int32]Bounds, error) {
	return listBounds(ctx, c.adm, c.topic, c.parts)
}

// Partitions are the consumed partitions, sorted.
func (c *PartitionConsumer) Partitions() []int32 { return slices.Clone(c.parts) }

// Close stops fetching and releases the client.
func (c *PartitionConsumer) Close() { c.cl.Close() }
