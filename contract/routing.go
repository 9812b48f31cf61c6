package contract

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"lukechampine.com/blake3"
)

// LaneID is a visibility lane inside a MailboxShard, in [0, LaneCount).
type LaneID uint8

// Lane returns lane_id = blake3(tenant_id ‖ user_id)[0] & (LaneCount-1). It is hashed on its own,
// not derived from the user's virtual bucket, so splitting a shard never moves a user's lane.
func Lane(tenant TenantID, user UserID) LaneID {
	var buf [24]byte
	binary.BigEndian.PutUint64(buf[0:], tenant.Hi)
	binary.BigEndian.PutUint64(buf[8:], tenant.Lo)
	binary.BigEndian.PutUint64(buf[16:], uint64(user))
	sum := blake3.Sum256(buf[:])
	return LaneID(sum[0] & (LaneCount - 1))
}

// VirtualBucket is a user's stable bucket in [0, VirtualBucketCount). Users are placed on shards
// only through their bucket, never by node count, so the bucket never changes.
type VirtualBucket uint16

// UserBucket derives the virtual bucket of (tenant, user).
func UserBucket(tenant TenantID, user UserID) VirtualBucket {
	var buf [len(DomainUserBucket) + 24]byte
	n := copy(buf[:], DomainUserBucket)
	binary.BigEndian.PutUint64(buf[n:], tenant.Hi)
	binary.BigEndian.PutUint64(buf[n+8:], tenant.Lo)
	binary.BigEndian.PutUint64(buf[n+16:], uint64(user))
	sum := blake3.Sum256(buf[:])
	return VirtualBucket(binary.BigEndian.Uint16(sum[:2]))
}

// ShardCount is a validated mailbox shard count: a power of two in [1, VirtualBucketCount].
// Writer, fanout and mailbox must be started with the same value; none may assume a default.
type ShardCount uint32

// ErrShardCount is returned for a shard count that is not a power of two in range.
var ErrShardCount = errors.New("contract: mailbox shard count must be a power of two in [1, 65536]")

// NewShardCount validates n.
func NewShardCount(n int) (ShardCount, error) {
	if n < 1 || n > VirtualBucketCount || n&(n-1) != 0 {
		return 0, fmt.Errorf("%w (got %d)", ErrShardCount, n)
	}
	return ShardCount(n), nil
}

// MailboxShard maps a bucket to its shard. Buckets map to shards in contiguous ranges, so doubling
// the shard count splits every shard in two and moves no bucket between unrelated shards.
func (n ShardCount) MailboxShard(b VirtualBucket) uint32 {
	shift := bits.TrailingZeros32(VirtualBucketCount) - bits.TrailingZeros32(uint32(n))
	return uint32(b) >> shift
}

// UserShard is the mailbox shard (and qim.dispatch partition) of (tenant, user).
func (n ShardCount) UserShard(tenant TenantID, user UserID) uint32 {
	return n.MailboxShard(UserBucket(tenant, user))
}

// CommitBucket is the commit bucket of a conversation in [0, CommitBucketCount). Commit facts,
// the sequence counter and group membership of the conversation live on that bucket's instance.
type CommitBucket uint8

// ConversationCommitBucket derives the commit bucket of (tenant, conversation).
func ConversationCommitBucket(tenant TenantID, conv ConversationID) CommitBucket {
	var buf [len(DomainCommitBucket) + 32]byte
	n := copy(buf[:], DomainCommitBucket)
	binary.BigEndian.PutUint64(buf[n:], tenant.Hi)
	binary.BigEndian.PutUint64(buf[n+8:], tenant.Lo)
	binary.BigEndian.PutUint64(buf[n+16:], conv.Hi)
	binary.BigEndian.PutUint64(buf[n+24:], conv.Lo)
	sum := blake3.Sum256(buf[:])
	return CommitBucket(sum[0])
}

// Instance maps the bucket onto one of n store instances; n must divide CommitBucketCount.
func (b CommitBucket) Instance(n int) (int, error) {
	if n < 1 || CommitBucketCount%n != 0 {
		return 0, fmt.Errorf("contract: %d store instances do not divide %d commit buckets", n, CommitBucketCount)
	}
	return int(b) % n, nil
}

// KeyTag is the Redis hash-tag form "{bNNN}" that keeps a bucket's keys together.
func (b CommitBucket) KeyTag() string { return fmt.Sprintf("{b%03d}", uint8(b)) }
