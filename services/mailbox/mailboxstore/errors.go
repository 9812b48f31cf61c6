package mailboxstore

import (
	"errors"
	"fmt"
	"strings"

	"github.com/qim-dev/qim/services/internal/rpc"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
)

// Sentinel errors callers branch on.
var (
	// ErrInvalid: an argument the scripts refuse (bad epoch, offset, digest, empty entries, a
	// recipient outside the shard). Nothing was written.
	ErrInvalid = errors.New("mailboxstore: invalid argument")
	// ErrCorrupt: stored state that cannot be right (a watermark that is not a number, an index
	// value that is not a seq, a watermark past a record without its identity). Fail closed.
	ErrCorrupt = fmt.Errorf("mailboxstore: stored mailbox state: %w", rpc.ErrCorrupt)
)

// ConflictError: a dispatch_id was materialized before with a different payload_digest. The
// contract says this never happens (dispatch ids are derived from the message and the shard, and
// the digest from its content); the MailboxNode stops the shard rather than pick one of the two.
type ConflictError struct {
	Shard      uint32
	Offset     int64
	DispatchID contract.DispatchID
	Detail     string // what the script saw, without payload bytes
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("mailboxstore: shard %d offset %d: dispatch %s: %s", e.Shard, e.Offset, e.DispatchID, e.Detail)
}

// FencedError: the shard's epoch or watermark is not what the caller holds, so another owner is
// materializing this shard (or an operator bumped the epoch). Nothing was written; the caller
// must stop owning the shard.
type FencedError struct {
	Shard  uint32
	Offset int64
	Detail string
}

func (e *FencedError) Error() string {
	return fmt.Sprintf("mailboxstore: shard %d offset %d fenced: %s", e.Shard, e.Offset, e.Detail)
}

// scriptError maps an error reply of a script onto the package's errors. Replies that are not
// ours (transport, context, NOSCRIPT left over) are wrapped unchanged.
func scriptError(op string, shard uint32, offset int64, id contract.DispatchID, err error) error {
	var re redis.Error
	if !errors.As(err, &re) {
		return fmt.Errorf("mailboxstore: %s on shard %d: %w", op, shard, err)
	}
	class, detail, _ := strings.Cut(err.Error(), " ")
	switch class {
	case "QIMINVAL":
		return fmt.Errorf("%w: %s on shard %d: %s", ErrInvalid, op, shard, detail)
	case "QIMCORRUPT":
		return fmt.Errorf("%w: %s on shard %d at offset %d: %s", ErrCorrupt, op, shard, offset, detail)
	case "QIMCONFLICT":
		return &ConflictError{Shard: shard, Offset: offset, DispatchID: id, Detail: detail}
	case "QIMFENCED":
		return &FencedError{Shard: shard, Offset: offset, Detail: detail}
	}
	return fmt.Errorf("mailboxstore: %s on shard %d: %w", op, shard, err)
}
