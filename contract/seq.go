package contract

import (
	"errors"
	"fmt"
)

// Sequences are stored as CQL bigint (signed) and compared as unsigned in Go and Redis. With bit
// 63 set the two orders disagree and clustering order flips at 2^63, so every sequence type
// rejects bit 63 at construction.

// ErrBit63 is returned for a sequence value with bit 63 set.
var ErrBit63 = errors.New("contract: sequence has bit 63 set")

const bit63 = uint64(1) << 63

// ConversationSeq is the strictly increasing, hole-allowing order of one conversation's history.
// Never infer loss from a gap: reservation windows, deletions and visibility trims make holes.
type ConversationSeq uint64

// NewConversationSeq validates v.
func NewConversationSeq(v uint64) (ConversationSeq, error) {
	if v&bit63 != 0 {
		return 0, fmt.Errorf("%w: conversation_seq %#x", ErrBit63, v)
	}
	return ConversationSeq(v), nil
}

// SeqBucket is the history bucket holding s (the CQL partition and empty-bucket scan unit).
func (s ConversationSeq) SeqBucket() uint64 { return uint64(s) / MessageSeqBucketWidth }

// MailboxSeq is a MailboxShard's composite delivery sequence: shard_epoch:16 ‖ log_offset:48.
// log_offset is the dispatch record's offset in its qim.dispatch partition, so one message has one
// mailbox_seq per shard however often it is replayed. Epochs start at 1 and bit 63 must stay zero,
// so valid epochs are 1..MaxShardEpoch. Because epoch 0 is never issued, the zero cursor (a device
// that has applied nothing) sorts strictly below compose(1, 0): a zero cursor includes log offset 0.
type MailboxSeq uint64

const (
	MaxShardEpoch = 1<<(ShardEpochBits-1) - 1 // bit 63 is the epoch's top bit
	MaxLogOffset  = 1<<LogOffsetBits - 1
	logOffsetMask = uint64(MaxLogOffset)
)

// ErrMailboxSeq is returned for an out-of-range epoch or offset.
var ErrMailboxSeq = errors.New("contract: mailbox_seq component out of range")

// ComposeMailboxSeq packs (epoch, offset).
func ComposeMailboxSeq(epoch uint16, offset uint64) (MailboxSeq, error) {
	if epoch == 0 || epoch > MaxShardEpoch {
		return 0, fmt.Errorf("%w: shard_epoch %d not in [1, %d]", ErrMailboxSeq, epoch, MaxShardEpoch)
	}
	if offset > MaxLogOffset {
		return 0, fmt.Errorf("%w: log_offset %d exceeds 48 bits", ErrMailboxSeq, offset)
	}
	return MailboxSeq(uint64(epoch)<<LogOffsetBits | offset), nil
}

// NewMailboxSeq validates a raw value from the wire or storage. Zero is valid (the empty cursor).
func NewMailboxSeq(v uint64) (MailboxSeq, error) {
	if v&bit63 != 0 {
		return 0, fmt.Errorf("%w: mailbox_seq %#x", ErrBit63, v)
	}
	return MailboxSeq(v), nil
}

// Epoch is the shard epoch component.
func (s MailboxSeq) Epoch() uint16 { return uint16(uint64(s) >> LogOffsetBits) }

// LogOffset is the dispatch-log offset component. Self-checks compare offsets, never composite
// values: compose(1, 0) is 2^48, and comparing composites would flag every fresh start.
func (s MailboxSeq) LogOffset() uint64 { return uint64(s) & logOffsetMask }

// Split returns (epoch, offset).
func (s MailboxSeq) Split() (uint16, uint64) { return s.Epoch(), s.LogOffset() }

// After reports whether an entry at s is beyond a device cursor c, i.e. not yet applied.
func (s MailboxSeq) After(c MailboxSeq) bool { return s > c }
