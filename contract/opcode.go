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
	OpAuth   Opcode = 0x0101
	OpAuthOK Opcode = 0x0102
	OpPing   Opcode = 0x0103
	OpPong   Opcode = 0x0104
	OpKicked Opcode = 0x0105
	OpError  Opcode = 0x0106
	OpLogout Opcode = 0x0107
	// OpRegisterPushToken and OpPushTokenAck register the device's offline-push token.
	OpRegisterPushToken Opcode = 0x0108
	OpPushTokenAck      Opcode = 0x0109
	OpSend              Opcode = 0x0201
	OpSendAck           Opcode = 0x0202

	OpPullMailbox  Opcode = 0x0301
	OpMailboxBatch Opcode = 0x0302
	OpPushEvents   Opcode = 0x0303

	OpPullSessionList  Opcode = 0x0401
	OpSessionListBatch Opcode = 0x0402
	OpSessionDelta     Opcode = 0x0403
	OpMarkRead         Opcode = 0x0404
	OpMarkReadAck      Opcode = 0x0405
	// OpReadSync is defined by the contract and intentionally unimplemented: no server sends it.
	// A user's other devices learn a moved read watermark from their next PULL_SESSION_LIST,
	// whose read_conversation_seq is absolute, so nothing is lost without it.
	OpReadSync Opcode = 0x0406
	// OpTyping and OpTypingEvent carry a typing indicator: ephemeral, never stored, best effort.
	OpTyping      Opcode = 0x0407
	OpTypingEvent Opcode = 0x0408
	// OpReadReceipt tells a user that the peer of a direct conversation read (best effort).
	OpReadReceipt Opcode = 0x0409
	// OpPullReadReceipts and OpReadReceiptsBatch: who of a group read how far (pull only).
	OpPullReadReceipts  Opcode = 0x040A
	OpReadReceiptsBatch Opcode = 0x040B
	// OpSetReadReceipts and OpReadReceiptsSet: a user withholds its read receipts, or shares again.
	OpSetReadReceipts Opcode = 0x040C
	OpReadReceiptsSet Opcode = 0x040D

	OpPullHistory  Opcode = 0x0501
	OpHistoryBatch Opcode = 0x0502
	// OpReact, OpReactAck and OpReactionEvent: reactions, an aggregate outside the mailbox.
	OpReact         Opcode = 0x0503
	OpReactAck      Opcode = 0x0504
	OpReactionEvent Opcode = 0x0505

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
	// Served says whether this server version acts on the opcode: for an uplink opcode, the
	// gateway handles it (otherwise it answers ERROR UNIMPLEMENTED); for a downlink opcode, some
	// service sends it. A client still accepts an unserved downlink frame if one ever arrives.
	// contract tests hold it to the services' sources and the gateway tests to its behaviour, so
	// the protocol doc generated from this table cannot promise frames the server never sends.
	Served bool
	// Note is one line for docs/protocol.md: what this server version does with the opcode, or
	// why it does not serve it.
	Note string
}

var opcodeTable = []OpcodeInfo{
	{OpAuth, "AUTH", Uplink, "AuthRequest", false, true,
		"first frame of a connection: AUTH_OK, or ERROR/KICKED and the connection closes"},
	{OpAuthOK, "AUTH_OK", Downlink, "AuthOk", false, true,
		"answers AUTH; carries user_id, session_epoch and the heartbeat schedule"},
	{OpPing, "PING", Both, "Ping", true, true,
		"answered by PONG with the same request id; the server itself never sends PING"},
	{OpPong, "PONG", Both, "Pong", true, true,
		"sent only in answer to a PING; a client PONG counts as liveness and gets no reply"},
	{OpKicked, "KICKED", Downlink, "Kicked", true, true,
		"last frame before a server-initiated close (REPLACED, LOGGED_OUT, SERVER_DRAIN, CREDENTIAL_EXPIRED, KICKED_BY_ADMIN); request id 0"},
	{OpError, "ERROR", Downlink, "ErrorFrame", true, true,
		"answers a failed request; last frame only in the cases of the connection table"},
	{OpLogout, "LOGOUT", Uplink, "Logout", false, true,
		"no reply: the server closes the connection"},
	{OpRegisterPushToken, "REGISTER_PUSH_TOKEN", Uplink, "RegisterPushToken", false, true,
		"answered by PUSH_TOKEN_ACK or ERROR (INVALID_ARGUMENT, UNAVAILABLE); the device's offline-push token (FCM, APNS, WEBHOOK), an empty token removes it"},
	{OpPushTokenAck, "PUSH_TOKEN_ACK", Downlink, "PushTokenAck", false, true,
		"answers REGISTER_PUSH_TOKEN once stored"},
	{OpSend, "SEND", Uplink, "SendRequest", false, true,
		"answered by SEND_ACK or ERROR; a peer_user_id or group_id target (NOT_MEMBER unless a current member) or a room_id target (any user; broadcast, not stored); CONTROL and SYSTEM are server-only (INVALID_ARGUMENT)"},
	{OpSendAck, "SEND_ACK", Downlink, "SendAck", false, true,
		"sent only once the message is COMMITTED; for a room, once the event is in the room's buffer (conversation_seq = room_seq)"},
	{OpPullMailbox, "PULL_MAILBOX", Uplink, "PullMailbox", false, true,
		"answered by MAILBOX_BATCH or ERROR; the only path that advances a device cursor"},
	{OpMailboxBatch, "MAILBOX_BATCH", Downlink, "MailboxBatch", false, true,
		"answers PULL_MAILBOX; next_cursor is the cursor to store"},
	{OpPushEvents, "PUSH_EVENTS", Downlink, "PushEvents", false, true,
		"best effort, request id 0; never moves the cursor"},
	{OpPullSessionList, "PULL_SESSION_LIST", Uplink, "PullSessionList", false, true,
		"answered by SESSION_LIST_BATCH or ERROR"},
	{OpSessionListBatch, "SESSION_LIST_BATCH", Downlink, "SessionListBatch", false, true,
		"answers PULL_SESSION_LIST"},
	{OpSessionDelta, "SESSION_DELTA", Downlink, "SessionDelta", false, true,
		"request id 0, best effort: after a MARK_READ, the conversation's complete entry to the user's other online devices (absolute values, merged like a list page)"},
	{OpMarkRead, "MARK_READ", Uplink, "MarkRead", false, true,
		"answered by MARK_READ_ACK or ERROR"},
	{OpMarkReadAck, "MARK_READ_ACK", Downlink, "MarkReadAck", false, true,
		"answers MARK_READ with the stored absolute watermark"},
	{OpReadSync, "READ_SYNC", Downlink, "ReadSync", false, false,
		"reserved, intentionally unimplemented: never sent; PULL_SESSION_LIST carries the watermark"},
	{OpTyping, "TYPING", Uplink, "Typing", false, true,
		"no answer: the peer of a direct conversation, or the other members of a group of at most 100, are sent TYPING_EVENT; never stored; above 2 a second per connection (burst 5) dropped"},
	{OpTypingEvent, "TYPING_EVENT", Downlink, "TypingEvent", false, true,
		"request id 0, best effort: someone is (or stopped) typing in a direct conversation with this user or a group of theirs; expires on its own"},
	{OpReadReceipt, "READ_RECEIPT", Downlink, "ReadReceipt", false, true,
		"request id 0, best effort: the peer of a direct conversation read up to read_conversation_seq; the session list's peer_read_conversation_seq holds it"},
	{OpPullReadReceipts, "PULL_READ_RECEIPTS", Uplink, "PullReadReceipts", false, true,
		"answered by READ_RECEIPTS_BATCH or ERROR: a group's other current members' read watermarks and, for a seq, how many of its audience read it; direct conversations INVALID_ARGUMENT"},
	{OpReadReceiptsBatch, "READ_RECEIPTS_BATCH", Downlink, "ReadReceiptsBatch", false, true,
		"answers PULL_READ_RECEIPTS in one frame (a group has at most 1,000 members)"},
	{OpSetReadReceipts, "SET_READ_RECEIPTS", Uplink, "SetReadReceipts", false, true,
		"answered by READ_RECEIPTS_SET: the user withholds its read receipts (and then sees nobody's) or shares again"},
	{OpReadReceiptsSet, "READ_RECEIPTS_SET", Downlink, "ReadReceiptsSet", false, true,
		"answers SET_READ_RECEIPTS with the stored value"},
	{OpPullHistory, "PULL_HISTORY", Uplink, "PullHistory", false, true,
		"answered by HISTORY_BATCH or ERROR; DIRECT and GROUP (clipped to the reader's intervals, NOT_MEMBER for a never-member); ROOM gets UNIMPLEMENTED"},
	{OpHistoryBatch, "HISTORY_BATCH", Downlink, "HistoryBatch", false, true,
		"answers PULL_HISTORY"},
	{OpReact, "REACT", Uplink, "React", false, true,
		"answered by REACT_ACK (also when it changed nothing) or ERROR: adds or removes the user's reaction on a message; never a message, never unread"},
	{OpReactAck, "REACT_ACK", Downlink, "ReactAck", false, true,
		"answers REACT with the target's reactions after it"},
	{OpReactionEvent, "REACTION_EVENT", Downlink, "ReactionEvent", false, true,
		"request id 0, best effort: a participant (of a direct conversation or a group of at most 100) reacted; PULL_HISTORY serves the counts"},
	{OpCreateGroup, "CREATE_GROUP", Uplink, "CreateGroup", false, true,
		"answered by GROUP_CREATED once the CREATE control message is committed, or ERROR (GROUP_FULL, CONFLICT)"},
	{OpGroupCreated, "GROUP_CREATED", Downlink, "GroupCreated", false, true,
		"answers CREATE_GROUP"},
	{OpPullMembers, "PULL_MEMBERS", Uplink, "PullMembers", false, true,
		"answered by MEMBERS_BATCH (current members, paged) or ERROR NOT_MEMBER"},
	{OpLeaveGroup, "LEAVE_GROUP", Uplink, "LeaveGroup", false, true,
		"answered by LEAVE_GROUP_ACK once the LEAVE control message is committed, or ERROR NOT_MEMBER"},
	{OpMembersBatch, "MEMBERS_BATCH", Downlink, "MembersBatch", false, true,
		"answers PULL_MEMBERS"},
	{OpLeaveGroupAck, "LEAVE_GROUP_ACK", Downlink, "LeaveGroupAck", false, true,
		"answers LEAVE_GROUP"},
	{OpJoinRoom, "JOIN_ROOM", Uplink, "JoinRoom", false, true,
		"answered by ROOM_JOINED (then the replay, then live ROOM_EVENTS) or ERROR (NOT_MEMBER when banned, RATE_LIMITED past 16 rooms, UNAVAILABLE while the room's RoomWriter is down); UNIMPLEMENTED on a deployment without RoomWriters"},
	{OpRoomJoined, "ROOM_JOINED", Downlink, "RoomJoined", false, true,
		"answers JOIN_ROOM; replay_truncated when events from the requested start are no longer held"},
	{OpLeaveRoom, "LEAVE_ROOM", Uplink, "LeaveRoom", false, true,
		"answered by ROOM_LEFT REQUESTED, also for a room not joined"},
	{OpRoomLeft, "ROOM_LEFT", Downlink, "RoomLeft", false, true,
		"answers LEAVE_ROOM; request id 0 when the server ends a membership (REMOVED by a kick or ban, SLOW_CONSUMER, UNAVAILABLE)"},
	{OpRoomEvents, "ROOM_EVENTS", Downlink, "RoomEvents", false, true,
		"request id 0; events of one room in room_seq order, never before that room's ROOM_JOINED"},
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
