package mailbox

import (
	"errors"
	"fmt"

	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/rpc"
)

// ErrBadDispatch is wrapped by every reason a dispatch record cannot be materialized safely:
// it does not decode, has an unknown schema_version, fails dispatch.Verify, sits on another
// partition than its shard, or names a recipient of another shard. Skipping such a record would
// lose a committed message, so the node stops.
var ErrBadDispatch = errors.New("mailbox: dispatch record cannot be materialized")

// ShardError stops the node: materialization of Shard stopped at the record at Offset. The
// shard's watermark is below Offset, so a restart replays from there once the cause is fixed.
type ShardError struct {
	Shard  uint32
	Offset int64
	Err    error
}

func (e *ShardError) Error() string {
	return fmt.Sprintf("mailbox: shard %d stopped at dispatch offset %d: %v", e.Shard, e.Offset, e.Err)
}

func (e *ShardError) Unwrap() error { return e.Err }

// StartError refuses to start a shard: its watermark and its partition's log do not line up.
// With a watermark W the next record W+1 must lie inside the log [Low, High]; below Low the
// records in between were deleted by retention before they were materialized, above High the
// log is shorter than what was materialized (a recreated topic: bump the shard epoch). Without a
// watermark the log must still start at 0.
type StartError struct {
	Shard     uint32
	Watermark int64 // -1: none
	Bounds    commitlog.Bounds
	Err       error
}

func (e *StartError) Error() string {
	return fmt.Sprintf("mailbox: refusing to start shard %d (watermark %d, log [%d, %d]): %v",
		e.Shard, e.Watermark, e.Bounds.Low, e.Bounds.High, e.Err)
}

func (e *StartError) Unwrap() error { return e.Err }

// ErrCorruptEntry: a stored mailbox entry does not decode to its own mailbox_seq. The pull is
// refused as a whole (INTERNAL through rpc.CodeOf) rather than answered without the entry, which
// the device would take for a complete batch and step its cursor over.
var ErrCorruptEntry = fmt.Errorf("mailbox: stored mailbox entry does not decode: %w", rpc.ErrCorrupt)
