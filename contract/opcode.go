package contract

import "fmt"

// Opcode identifies a frame's payload type on the client wire. The high byte is the family
// (0x01 connection, 0x02 send, 0x03 mailbox, 0x04 session, 0x05 history, 0x0A group, 0x0B room),
// the low byte the member. Values are frozen once shipped: a client built against an older table
// must keep working, so an opcode is never renumbered or reused, only added.
type Opcode uint16

// Direction says which side may send a frame with a given opcode. The server never re-serialises
// an uplink message it forwards (unknown fields must survive), so each exchange has separate
// uplink and downlink messages and therefore separate opcodes.
type Direction uint8

const (
	Uplink   Direction = 1 // client → server
	Downlink Direction = 2 // server → client
	Both     Direction = 3 // either side (PING)
)

// The opcode table. Keep it in one block, sorted by value; opcodeTable below must list every one.
const (
	OpAuth    Opcode = 0x0101
	OpAuthOK  Opcode = 0x0102
	OpPing    Opcode = 0x0103
	OpPong    Opcode = 0x0104
	OpKicked  Opcode = 0x0105
	OpError   Opcode = 0x0106
	OpLogout  Opcode = 0x0107
	OpSend    Opcode = 0x0201
	OpSendAck Opcode = 0x0202

	OpPullMailbox  Opcode = 0x0301
	OpMailboxBatch Opcode = 0x0302
	OpPushEvents   Opcode = 0x0303

	OpPullSessionList  Opcode = 0x0401
	OpSessionListBatch Opcode = 0x0402
	OpSessionDelta     Opcode = 0x0403
	OpMarkRead         Opcode = 0x0404
	OpMarkReadAck      Opcode = 0x0405
	// OpReadSync is defined by the contract and intentionally unimplemented: phase one evicts by
	// user, so a user never has two devices online at once and the frame would have no receiver.
	OpReadSync Opcode = 0x0406

	OpPullHistory  Opcode = 0x0501
	OpHistoryBatch Opcode = 0x0502

	OpCreateGroup   Opcode = 0x0A01
	OpGroupCreated  Opcode = 0x0A02
	OpPullMembers   Opcode = 0x0A03
	OpLeaveGroup    Opcode = 0x0A04
	OpMembersBatch  Opcode = 0x0A05
	OpLeaveGroupAck Opcode = 0x0A06

	OpJoinRoom   Opcode = 0x0B01
	OpRoomJoined Opcode = 0x0B02
	OpLeaveRoom  Opcode = 0x0B03
	OpRoomLeft   Opcode = 0x0B04
	OpRoomEvents Opcode = 0x0B05
)

// OpcodeInfo describes one row of the opcode table.
type OpcodeInfo struct {
	Op        Opcode
	Name      string    // SCREAMING_SNAKE name used in docs and logs
	Direction Direction // who may send it
	Message   string    // protobuf message name in package qim.v1
	// Control frames jump the per-connection write queue between 64 KiB chunks of a large frame,
	// so a 4 MiB MAILBOX_BATCH never delays a PONG long enough to trip the heartbeat.
	Control bool
	// Implemented is false for opcodes the contract reserves but no server handles yet.
	Implemented bool
}

var opcodeTable = []OpcodeInfo{
	{OpAuth, "AUTH", Uplink, "AuthRequest", false, true},
	{OpAuthOK, "AUTH_OK", Downlink, "AuthOk", false, true},
	{OpPing, "PING", Both, "Ping", true, true},
	{OpPong, "PONG", Both, "Pong", true, true},
	{OpKicked, "KICKED", Downlink, "Kicked", true, true},
	{OpError, "ERROR", Downlink, "ErrorFrame", true, true},
	{OpLogout, "LOGOUT", Uplink, "Logout", false, true},
	{OpSend, "SEND", Uplink, "SendRequest", false, true},
	{OpSendAck, "SEND_ACK", Downlink, "SendAck", false, true},
	{OpPullMailbox, "PULL_MAILBOX", Uplink, "PullMailbox", false, true},
	{OpMailboxBatch, "MAILBOX_BATCH", Downlink, "MailboxBatch", false, true},
	{OpPushEvents, "PUSH_EVENTS", Downlink, "PushEvents", false, true},
	{OpPullSessionList, "PULL_SESSION_LIST", Uplink, "PullSessionList", false, true},
	{OpSessionListBatch, "SESSION_LIST_BATCH", Downlink, "SessionListBatch", false, true},
	{OpSessionDelta, "SESSION_DELTA", Downlink, "SessionDelta", false, true},
	{OpMarkRead, "MARK_READ", Uplink, "MarkRead", false, true},
	{OpMarkReadAck, "MARK_READ_ACK", Downlink, "MarkReadAck", false, true},
	{OpReadSync, "READ_SYNC", Downlink, "ReadSync", false, false},
	{OpPullHistory, "PULL_HISTORY", Uplink, "PullHistory", false, true},
	{OpHistoryBatch, "HISTORY_BATCH", Downlink, "HistoryBatch", false, true},
	{OpCreateGroup, "CREATE_GROUP", Uplink, "CreateGroup", false, true},
	{OpGroupCreated, "GROUP_CREATED", Downlink, "GroupCreated", false, true},
	{OpPullMembers, "PULL_MEMBERS", Uplink, "PullMembers", false, true},
	{OpLeaveGroup, "LEAVE_GROUP", Uplink, "LeaveGroup", false, true},
	{OpMembersBatch, "MEMBERS_BATCH", Downlink, "MembersBatch", false, true},
	{OpLeaveGroupAck, "LEAVE_GROUP_ACK", Downlink, "LeaveGroupAck", false, true},
	{OpJoinRoom, "JOIN_ROOM", Uplink, "JoinRoom", false, true},
	{OpRoomJoined, "ROOM_JOINED", Downlink, "RoomJoined", false, true},
	{OpLeaveRoom, "LEAVE_ROOM", Uplink, "LeaveRoom", false, true},
	{OpRoomLeft, "ROOM_LEFT", Downlink, "RoomLeft", false, true},
	{OpRoomEvents, "ROOM_EVENTS", Downlink, "RoomEvents", false, true},
}

var opcodeIndex = func() map[Opcode]OpcodeInfo {
	m := make(map[Opcode]OpcodeInfo, len(opcodeTable))
	for _, info := range opcodeTable {
		if _, dup := m[info.Op]; dup {
			panic(fmt.Sprintf("contract: opcode 0x%04X listed twice", uint16(info.Op)))
		}
		m[info.Op] = info
	}
	return m
}()

// Opcodes returns a copy of the opcode table in value order.
func Opcodes() []OpcodeInfo { return append([]OpcodeInfo(nil), opcodeTable...) }

// Lookup returns the table row of op, or false for an opcode the contract does not define.
func (op Opcode) Lookup() (OpcodeInfo, bool) {
	info, ok := opcodeIndex[op]
	return info, ok
}

// Family is the opcode's high byte (0x01 connection, 0x02 send, ...).
func (op Opcode) Family() uint8 { return uint8(op >> 8) }

// IsControl reports whether frames with this opcode may overtake queued data chunks.
func (op Opcode) IsControl() bool { return opcodeIndex[op].Control }

func (op Opcode) String() string {
	if info, ok := opcodeIndex[op]; ok {
		return info.Name
	}
	return fmt.Sprintf("OPCODE(0x%04X)", uint16(op))
}
