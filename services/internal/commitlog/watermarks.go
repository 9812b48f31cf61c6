package commitlog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Bounds are a partition's offsets: Low is the log start (the oldest record still kept; below it
// retention deleted), High is the end a read_committed consumer can reach (the last stable
// offset: the offset the next record will get, once no transaction is open — this module never
// produces transactionally, so it equals the high watermark).
type Bounds struct {
	Low, High int64
}

// ValidateStart encodes the rule every static consumer starts by. With a committed position
// (the offset of the next record to process), it must lie inside [Low, High]: below Low the
// records in between were deleted unprocessed; above High the log is shorter than what was
// processed (a recreated topic or a lost broker) and new records would be skipped. Without a
// committed position, the consumer starts at 0 only if the log still starts at 0; a log that
// starts later has lost records nobody can prove were processed. Both refusals are
// *OffsetOutOfRangeError: the operator decides, the code never guesses.
func ValidateStart(committed int64, hasCommitted bool, b Bounds) (int64, error) {
	if b.Low < 0 || b.High < b.Low {
		return -1, fmt.Errorf("commitlog: invalid log bounds [%d, %d]", b.Low, b.High)
	}
	if !hasCommitted {
		if b.Low != 0 {
			return -1, &OffsetOutOfRangeError{Low: b.Low, High: b.High}
		}
		return 0, nil
	}
	if committed < b.Low || committed > b.High {
		return -1, &OffsetOutOfRangeError{Committed: committed, HasCommitted: true, Low: b.Low, High: b.High}
	}
	return committed, nil
}

// Admin answers the startup questions asked before a consumer exists: where a topic's
// partitions begin and end, and (through OffsetStore) where a group's position is.
type Admin struct {
	cl  *kgo.Client
	adm *kadm.Client
}

// AdminOption configures NewAdmin.
type AdminOption func(*[]kgo.Opt)

// AdminRequests counts the admin client's Kafka requests (an OffsetStore commits through it).
func AdminRequests(m *RequestMetrics) AdminOption {
	return func(o *[]kgo.Opt) { *o = append(*o, m.opts(defaultAdminClientID)...) }
}

// AdminSecurity adds the SASL and TLS options of the brokers (storeauth.Kafka.Opts). Default
// none: plaintext without SASL.
func AdminSecurity(opts []kgo.Opt) AdminOption {
	return func(o *[]kgo.Opt) { *o = append(*o, opts...) }
}

// NewAdmin creates an admin client; it does not contact a broker until used.
func NewAdmin(brokers []string, options ...AdminOption) (*Admin, error) {
	if len(brokers) == 0 {
		return nil, fmt.Errorf("%w: admin needs at least one broker", ErrConfig)
	}
	opts := []kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ClientID(defaultAdminClientID)}
	for _, o := range options {
		o(&opts)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("commitlog: admin: %w", err)
	}
	return &Admin{cl: cl, adm: kadm.NewClient(cl)}, nil
}

// Watermarks returns the bounds of the given partitions of topic (all partitions when none are
// given). A missing topic is ErrTopicMissing; a requested partition the topic does not have, or
// one that reports an error, is a *PartitionNotReadyError.
func (a *Admin) Watermarks(ctx context.Context, topic string, partitions ...int32) (map[int32]Bounds, error) {
	return listBounds(ctx, a.adm, topic, partitions)
}

// Close releases the client.
func (a *Admin) Close() { a.cl.Close() }

// listBounds lists start and end offsets of every partition of topic in two concurrent
// requests (each one ListOffsets per broker covering all partitions): readiness of 64 dispatch
// partitions must not pay 128 sequential round trips or timeouts.
func listBounds(ctx context.Context, adm *kadm.Client, topic string, parts []int32) (map[int32]Bounds, error) {
	var out map[int32]Bounds
	err := withRetry(ctx, func() (err error) {
		out, err = listBoundsOnce(ctx, adm, topic, parts)
		return err
	})
	return out, err
}

func listBoundsOnce(ctx context.Context, adm *kadm.Client, topic string, parts []int32) (map[int32]Bounds, error) {
	var (
		wg           sync.WaitGroup
		starts, ends kadm.ListedOffsets
		serr, eerr   error
	)
	wg.Add(2)
	go func() { defer wg.Done(); starts, serr = adm.ListStartOffsets(ctx, topic) }()
	go func() { defer wg.Done(); ends, eerr = adm.ListCommittedOffsets(ctx, topic) }()
	wg.Wait()
	if err := errors.Join(serr, eerr); err != nil {
		return nil, fmt.Errorf("commitlog: watermarks of %s: %w", topic, err)
	}
	if o, ok := starts.Lookup(topic, -1); ok && o.Err != nil {
		if errors.Is(o.Err, kerr.UnknownTopicOrPartition) {
			return nil, fmt.Errorf("%w: %s", ErrTopicMissing, topic)
		}
		return nil, fmt.Errorf("commitlog: watermarks of %s: %w", topic, o.Err)
	}
	if len(parts) == 0 {
		for p := range starts[topic] {
			parts = append(parts, p)
		}
		slices.Sort(parts)
	}
	return boundsOf(topic, parts, starts, ends)
}

func boundsOf(topic string, parts []int32, starts, ends kadm.ListedOffsets) (map[int32]Bounds, error) {
	out := make(map[int32]Bounds, len(parts))
	for _, p := range parts {
		lo, ok1 := starts.Lookup(topic, p)
		hi, ok2 := ends.Lookup(topic, p)
		if !ok1 || !ok2 {
			return nil, &PartitionNotReadyError{Topic: topic, Partition: p, Leader: -1,
				Err: errors.New("partition absent from the offset listing")}
		}
		if err := errors.Join(lo.Err, hi.Err); err != nil {
			return nil, &PartitionNotReadyError{Topic: topic, Partition: p, Leader: -1, Err: err}
		}
		out[p] = Bounds{Low: lo.Offset, High: hi.Offset}
	}
	return out, nil
}
