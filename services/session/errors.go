package session

import (
	"errors"
	"fmt"

	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/rpc"
)

// Sentinel errors callers branch on.
var (
	// ErrBadDispatch: a dispatch record that does not decode, verify or belong to its partition.
	// The projection stops instead of skipping it (a skipped record loses a conversation).
	ErrBadDispatch = errors.New("session: dispatch record cannot be projected")
	// ErrCorruptState: session state in Redis that this build cannot read (a checkpoint that is
	// not a number, offsets without a binding). Fail closed; an operator decides. It wraps
	// rpc.ErrCorrupt, so a request that meets it is answered INTERNAL.
	ErrCorruptState = fmt.Errorf("session: corrupt session state in redis: %w", rpc.ErrCorrupt)
)

// BindingError: the checkpoints in Redis were written for another log than the one the broker
// serves now — another cluster, a recreated topic (same name, new topic id) or another
// partition count. Resuming would apply offsets of one log to another and skip or repeat
// records, so start-up refuses; the operator resets the projection (deletes the checkpoint key
// and lets it rebuild from offset 0) or points the service at the right cluster.
type BindingError struct {
	Topic  string
	Field  string // "cluster_id", "topic_id" or "partitions"
	Stored string
	Live   string
}

func (e *BindingError) Error() string {
	return fmt.Sprintf("session: checkpoints of %s are bound to %s %q but the broker reports %q; refusing to start "+
		"(a recreated topic or another cluster: reset the projection deliberately)", e.Topic, e.Field, e.Stored, e.Live)
}

// TopicIDError: the broker reports no usable topic id (absent or all zero: a broker without
// KIP-516). Without it a recreated topic cannot be told from the old one, so start-up refuses.
type TopicIDError struct {
	Topic string
}

func (e *TopicIDError) Error() string {
	return fmt.Sprintf("session: broker reports no topic id for %s (needs KIP-516 topic ids); refusing to start", e.Topic)
}

// StartError: a partition's checkpoint cannot be justified by its log (see
// commitlog.ValidateStart). It wraps the *commitlog.OffsetOutOfRangeError.
type StartError struct {
	Partition  int32
	Checkpoint int64 // -1 when none
	Bounds     commitlog.Bounds
	Err        error
}

func (e *StartError) Error() string {
	return fmt.Sprintf("session: partition %d checkpoint %d, log [%d, %d]: %v", e.Partition, e.Checkpoint,
		e.Bounds.Low, e.Bounds.High, e.Err)
}

func (e *StartError) Unwrap() error { return e.Err }

// FencedError: a checkpoint was not at the value this process left it at, so another process
// projects the same partition (or the checkpoint was reset under it). The projection stops.
type FencedError struct {
	Partition int32
	Offset    int64
	Detail    string
}

func (e *FencedError) Error() string {
	return fmt.Sprintf("session: checkpoint of partition %d moved under this process at offset %d (%s); stopped",
		e.Partition, e.Offset, e.Detail)
}

// RecordError names the record the projection stopped at.
type RecordError struct {
	Partition int32
	Offset    int64
	Err       error
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("session: partition %d offset %d: %v", e.Partition, e.Offset, e.Err)
}

func (e *RecordError) Unwrap() error { return e.Err }
