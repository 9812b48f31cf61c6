package contract

import (
	"encoding/binary"

	"lukechampine.com/blake3"
)

// Rooms (chatrooms): live broadcast with a short replay window and no durability (ADR-0034).
// A room's events live only in its RoomWriter's in-process ring buffer; nothing of a room is
// written to a mailbox, a session row, unread or history.

// RoomLeftReason tells a client why a connection no longer receives a room's events (ROOM_LEFT).
type RoomLeftReason uint32

const (
	RoomLeftRequested RoomLeftReason = 0 // the answer to LEAVE_ROOM
	RoomLeftClosed    RoomLeftReason = 1 // the room was closed
	RoomLeftRemoved   RoomLeftReason = 2 // kicked or banned from the room
	// RoomLeftSlowConsumer: the connection fell further behind than its queue holds; it
	// rejoins with replay_from_room_seq to catch up on what the buffer still has.
	RoomLeftSlowConsumer RoomLeftReason = 3
	// RoomLeftUnavailable: the room's RoomWriter was lost (a crash, a restart, a broken link).
	// The buffer did not survive; the client rejoins, and the room_seq epoch jump shows the gap.
	RoomLeftUnavailable RoomLeftReason = 4
)

// String is the reason's name in docs/protocol.md.
func (r RoomLeftReason) String() string {
	switch r {
	case RoomLeftRequested:
		return "REQUESTED"
	case RoomLeftClosed:
		return "ROOM_CLOSED"
	case RoomLeftRemoved:
		return "REMOVED"
	case RoomLeftSlowConsumer:
		return "SLOW_CONSUMER"
	case RoomLeftUnavailable:
		return "UNAVAILABLE"
	}
	return "UNSPECIFIED"
}

// RoomSeqBase is the room_seq a room instantiated at unixSeconds starts above: its first event
// gets RoomSeqBase + 1.
func RoomSeqBase(unixSeconds int64) uint64 {
	if unixSeconds < 0 {
		unixSeconds = 0
	}
	return uint64(unixSeconds) << RoomSeqEpochShift
}

// RoomRendezvous is the score of one RoomWriter instance for a room: every gateway sends a
// room's joins and publishes to the configured instance with the highest score. Unlike
// WriterRendezvous this is ownership, not affinity — a room's room_seq and buffer live in one
// process — so gateways never fall back to another instance while the owner is down (two
// gateways that disagreed would split the room into two sequences).
func RoomRendezvous(tenant TenantID, room ConversationID, instance string) uint64 {
	var arr [len(DomainRoomRoute) + 32 + 64]byte
	buf := append(arr[:0], DomainRoomRoute...)
	buf = binary.BigEndian.AppendUint64(buf, tenant.Hi)
	buf = binary.BigEndian.AppendUint64(buf, tenant.Lo)
	buf = binary.BigEndian.AppendUint64(buf, room.Hi)
	buf = binary.BigEndian.AppendUint64(buf, room.Lo)
	sum := blake3.Sum256(append(buf, instance...))
	return binary.BigEndian.Uint64(sum[:8])
}

// RoomOwner is the index in instances of the RoomWriter owning a room (-1 with none). Ties go
// to the earlier entry, so every gateway with the same list agrees.
func RoomOwner(tenant TenantID, room ConversationID, instances []string) int {
	owner, top := -1, uint64(0)
	for i, a := range instances {
		if sc := RoomRendezvous(tenant, room, a); owner < 0 || sc > top {
			owner, top = i, sc
		}
	}
	return owner
}
