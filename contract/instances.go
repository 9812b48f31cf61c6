package contract

import (
	"encoding/binary"
	"fmt"

	"lukechampine.com/blake3"
)

// Static placement of mailbox shards on MailboxNode and SessionProjection instances (phase one:
// assignment by configuration, ADR-0026). Instance i of n serves one contiguous range of shards,
// the same for both services, so a gateway that knows the shard count and the instance list
// finds the node of any user without asking anyone, and a user's mailbox and session list are
// served by instances with the same index.

// ShardInstance is the index in [0, instances) of the instance serving shard.
func (n ShardCount) ShardInstance(shard uint32, instances int) int {
	return int(uint64(shard) * uint64(instances) / uint64(n))
}

// InstanceShards is the inclusive shard range [first, last] instance i of n serves: the shards
// for which ShardInstance is i. ok is false when i is out of range or the instance serves no
// shard (more instances than shards).
func (n ShardCount) InstanceShards(i, instances int) (first, last uint32, ok bool) {
	if instances < 1 || i < 0 || i >= instances {
		return 0, 0, false
	}
	// The smallest s with s*instances/n >= i is ceil(i*n/instances).
	lo := (uint64(i)*uint64(n) + uint64(instances) - 1) / uint64(instances)
	hi := (uint64(i+1)*uint64(n)+uint64(instances)-1)/uint64(instances) - 1
	if lo > hi || lo >= uint64(n) {
		return 0, 0, false
	}
	return uint32(lo), uint32(hi), true
}

// InstanceShardSpec is InstanceShards in the environment form of QIM_MAILBOX_OWNED_SHARDS and
// QIM_SESSION_OWNED_SHARDS ("first-last"), or "" when the instance serves no shard.
func (n ShardCount) InstanceShardSpec(i, instances int) string {
	first, last, ok := n.InstanceShards(i, instances)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%d-%d", first, last)
}

// WriterRendezvous is the score of one ConversationWriter instance for a conversation: each
// gateway routes a conversation's SENDs to the reachable instance with the highest score, so
// every gateway agrees without coordination and losing an instance moves only its conversations.
// The instance is named by its configured address. Affinity only: any writer commits any
// conversation correctly, because the conversation_seq and the idempotency record are assigned
// atomically in the core Redis.
func WriterRendezvous(tenant TenantID, conv ConversationID, instance string) uint64 {
	var arr [len(DomainWriterRoute) + 32 + 64]byte // room for a host:port without growing
	buf := append(arr[:0], DomainWriterRoute...)
	buf = binary.BigEndian.AppendUint64(buf, tenant.Hi)
	buf = binary.BigEndian.AppendUint64(buf, tenant.Lo)
	buf = binary.BigEndian.AppendUint64(buf, conv.Hi)
	buf = binary.BigEndian.AppendUint64(buf, conv.Lo)
	sum := blake3.Sum256(append(buf, instance...))
	return binary.BigEndian.Uint64(sum[:8])
}
