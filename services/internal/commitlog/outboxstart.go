package commitlog

import (
	"context"
	"errors"
)

// outboxPartition is the Outbox's only partition: its order is the commit order.
const outboxPartition = 0

// OutboxStart is where a static consumer of the Outbox (the fanout, the archiver) begins.
type OutboxStart struct {
	Bounds  Bounds       // the Outbox's bounds when the start was resolved
	Start   int64        // the validated offset of the next record to process
	Offsets *OffsetStore // where the consumer commits its position
}

// ResolveOutboxStart performs the start-up every Outbox consumer shares, in this order: the
// topic has exactly one partition (*PartitionCountError), the group's stored position is read,
// and ValidateStart accepts it (an *OffsetOutOfRangeError naming the topic and partition).
// Nothing here creates a consumer: the caller does, at Start, only after this succeeded.
func ResolveOutboxStart(ctx context.Context, a *Admin, group, topic string) (OutboxStart, error) {
	wm, err := a.Watermarks(ctx, topic)
	if err != nil {
		return OutboxStart{}, err
	}
	b, ok := wm[outboxPartition]
	if len(wm) != 1 || !ok {
		return OutboxStart{}, &PartitionCountError{Topic: topic, Want: 1, Got: len(wm)}
	}
	offsets, err := NewOffsetStore(a, group, topic)
	if err != nil {
		return OutboxStart{}, err
	}
	committed, found, err := offsets.Fetch(ctx, outboxPartition)
	if err != nil {
		return OutboxStart{}, err
	}
	start, err := ValidateStart(committed, found, b)
	if err != nil {
		var oor *OffsetOutOfRangeError
		if errors.As(err, &oor) {
			oor.Topic, oor.Partition = topic, outboxPartition
		}
		return OutboxStart{}, err
	}
	return OutboxStart{Bounds: b, Start: start, Offsets: offsets}, nil
}
