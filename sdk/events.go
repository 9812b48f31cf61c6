package sdk

import (
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/sdk/store"
)

// Event is one notification on Client.Events. The concrete types are below; switch on them.
//
// Ordering: events are delivered in the order the connection goroutine produced them, and only
// after the change they report is committed to the local store. For one batch,
// ConversationsUpdated (with absolute unread counts that already include the batch) comes before
// MessagesAdded: an app must overwrite its counters from the former and never add to them on the
// latter, or one message is counted twice.
type Event interface{ isEvent() }

// Online: AUTH_OK received; the client is now reconciling (SyncProgress follows).
type Online struct {
	SessionEpoch      uint64
	HeartbeatInterval time.Duration
}

// Offline: the connection ended. Retry says whether the client reconnects by itself (after
// RetryIn); when false the connection loop has stopped (Err says why) and only Connect restarts it.
type Offline struct {
	Err     error
	Retry   bool
	RetryIn time.Duration
}

// MessagesAdded: messages newly stored locally (pushed, pulled or backfilled after a REBUILD).
// The user's own sends are reported by Committed instead, and pages the app asked for with
// History are returned to it, not repeated here.
type MessagesAdded struct {
	Messages []Message
	Source   store.Source
}

// ConversationsUpdated carries the complete, absolute state of every conversation a change
// touched (unread, latest seq, read watermark, incompleteness): stored messages, MarkRead, the
// session list merged after a login (watermarks another device set, conversations this device
// never saw) and MARK_READ_ACKs that moved the watermark further than asked.
type ConversationsUpdated struct {
	Conversations []Conversation
}

// Committed: a pending send is committed; Message is the stored message (seq, message_id).
// Proof came from SEND_ACK or from the sender's own mailbox/history copy, whichever came first.
type Committed struct {
	ClientMessageID contract.ClientMessageID
	Message         Message
}

// Failed: a pending send will never be committed (a definite server rejection, it expired, or
// the credential was revoked before it was sent: ErrRevoked).
type Failed struct {
	ClientMessageID contract.ClientMessageID
	Code            contract.ErrorCode // 0 when the client gave up on its own (Err)
	Err             error
}

// Kicked: the server closed the connection on purpose. When Reconnect is false (REPLACED,
// KICKED_BY_ADMIN, LOGGED_OUT, BANNED) the connection loop has stopped for good.
type Kicked struct {
	Reason    contract.KickReason
	Detail    string
	Reconnect bool
}

// SyncPhase names a step of the reconciliation after (re)connect.
type SyncPhase uint8

const (
	SyncMailbox  SyncPhase = 1 // PULL_MAILBOX from the stored cursor
	SyncRebuild  SyncPhase = 2 // after CURSOR_EXPIRED: PULL_MAILBOX from zero
	SyncBackfill SyncPhase = 3 // PULL_HISTORY of possibly incomplete conversations (REBUILD, discovered ones)
	SyncDone     SyncPhase = 4 // reconciled; pending sends go out now
	SyncSessions SyncPhase = 5 // PULL_SESSION_LIST: read watermarks and unknown conversations, after the mailbox
)

func (p SyncPhase) String() string {
	switch p {
	case SyncMailbox:
		return "mailbox"
	case SyncRebuild:
		return "rebuild"
	case SyncBackfill:
		return "backfill"
	case SyncDone:
		return "done"
	case SyncSessions:
		return "sessions"
	}
	return "unknown"
}

// SyncProgress reports reconciliation progress. It is coalesced: an app that reads slowly sees
// the latest progress, not every step.
type SyncProgress struct {
	Phase   SyncPhase
	Applied int // messages newly stored during this reconciliation so far
	Cursor  contract.MailboxSeq
}

// ResetReason says why the local store's cursor was reset.
type ResetReason string

// ResetCursorExpired: the mailbox no longer holds everything after the stored cursor (the device
// was offline beyond contract.MailboxRetention); the client REBUILDs.
const ResetCursorExpired ResetReason = "cursor_expired"

// LocalStoreReset: the cursor was reset (REBUILD). Local messages are kept; conversations that may
// miss messages are marked Incomplete until the history backfill has filled them.
type LocalStoreReset struct {
	Reason         ResetReason
	Generation     uint64              // the new cursor generation
	PreviousCursor contract.MailboxSeq // what the device had applied
	ServerResume   contract.MailboxSeq // the server's resume cursor (informational; see store.ResetForRebuild)
}

// GroupCreated: a CreateGroup is durable on the server (GROUP_CREATED). Group is the id
// CreateGroup returned; the group's CREATE membership message arrives through the mailbox.
type GroupCreated struct {
	ClientRequestID   contract.U128
	Group             contract.ConversationID
	MembershipVersion uint64
}

// GroupCreateFailed: a CreateGroup will never be created (a definite server refusal, Code and a
// *ServerError in Err, or it expired). Sends queued to the group then fail NOT_MEMBER.
type GroupCreateFailed struct {
	ClientRequestID contract.U128
	Group           contract.ConversationID
	Code            contract.ErrorCode // 0 when the client gave up on its own (Err)
	Err             error
}

// MembershipChanged: a membership CONTROL message of a group (custom_type
// contract.MembershipCustomType) was newly stored, decoded. It follows the MessagesAdded that
// carries the message itself. Within one batch the events are in seq order; across batches a
// push can overtake a pull, so Version, which grows with every change, is what orders them.
// Err is set (and the change empty) when the mailbox did not inline the body or it does not
// decode: History fetches the message and DecodeMembership reads it.
type MembershipChanged struct {
	Group     contract.ConversationID
	Seq       contract.ConversationSeq
	MessageID contract.MessageID
	SentAtMs  int64
	MembershipChange
	Err error
}

// MessagesAmended: stored messages changed by a recall, edit or delete (ADR-0037), as they are
// now stored: Flags has contract.FlagRecalled or FlagDeleted (no body any more) or FlagEdited
// (Body is the newest edit). It follows the MessagesAdded of the amendment's own CONTROL message
// and the ConversationsUpdated whose unread already leaves a recalled message out. Messages
// this device never stored are not reported; History serves them amended.
type MessagesAmended struct {
	Messages []Message
}

// RoomJoined: the connection receives a room's events now (ROOM_JOINED), after the app's
// JoinRoom or after the SDK rejoined on its own (Rejoin: a reconnect, or ROOM_LEFT SLOW_CONSUMER
// or UNAVAILABLE). It precedes every RoomEvents of that membership. RoomSeq is the room's latest
// room_seq at join time; ReplayTruncated: the replay could not start where it was asked to (the
// room's buffer no longer holds those events, or its server restarted), so events were lost.
type RoomJoined struct {
	Room            contract.U128
	RoomSeq         uint64
	ReplayTruncated bool
	Rejoin          bool
}

// RoomEvents: live or replayed events of a joined room, in room_seq order, never repeated. Gap is
// set when room_seq jumped before Events[0]: events were lost to this client (rooms are lossy by
// design), and a jump by far more than a burst means the room's server restarted.
type RoomEvents struct {
	Room   contract.U128
	Events []RoomEvent
	Gap    *RoomGap
}

// RoomEvent is one event published into a room. It is held in memory only: rooms never touch the
// local store.
type RoomEvent struct {
	RoomSeq    uint64
	Sender     contract.UserID // 0 = the system
	Type       contract.MessageType
	CustomType string
	Body       []byte
	SentAtMs   int64 // publish time, for display only
}

// RoomGap names the events not delivered: room_seq After+1 up to Next-1.
type RoomGap struct {
	After, Next uint64
}

// Lost is how many room_seq values were skipped (after a restart of the room's server, an epoch
// jump of about 2^30 per second, not a count of real events).
func (g RoomGap) Lost() uint64 { return g.Next - g.After - 1 }

// RoomLeft: the connection no longer receives a room's events. Reason REQUESTED answers LeaveRoom.
// With Rejoining (SLOW_CONSUMER, UNAVAILABLE) the SDK rejoins by itself from the last room_seq it
// delivered, and RoomJoined{Rejoin} follows; otherwise (REMOVED, ROOM_CLOSED) the room is gone
// from Rooms. Err is set when the SDK gave up a rejoin the server refused for good (Reason
// REMOVED when it refused NOT_MEMBER: banned meanwhile, UNAVAILABLE otherwise).
type RoomLeft struct {
	Room      contract.U128
	Reason    contract.RoomLeftReason
	Rejoining bool
	Err       error
}

// Typing: User is typing in Conversation (Typing true), a direct conversation with the user or a
// group of at most contract.TypingGroupMaxMembers members, or stopped. A true holds until Until unless a newer Typing renews or ends it; nothing about it is stored.
type Typing struct {
	Conversation contract.ConversationID
	User         contract.UserID
	Typing       bool
	Until        time.Time
}

// ReadReceipt: Reader, the peer of the direct conversation Conversation, has read every message
// up to Seq (a read receipt, pushed best effort as the peer's MARK_READ lands; absolute and
// forward only, so apply it as max(known, Seq)). Nothing about it is stored.
type ReadReceipt struct {
	Conversation contract.ConversationID
	Reader       contract.UserID
	Seq          contract.ConversationSeq
}

func (Online) isEvent()               {}
func (Offline) isEvent()              {}
func (MessagesAdded) isEvent()        {}
func (ConversationsUpdated) isEvent() {}
func (Committed) isEvent()            {}
func (Failed) isEvent()               {}
func (Kicked) isEvent()               {}
func (SyncProgress) isEvent()         {}
func (LocalStoreReset) isEvent()      {}
func (GroupCreated) isEvent()         {}
func (GroupCreateFailed) isEvent()    {}
func (MembershipChanged) isEvent()    {}
func (RoomJoined) isEvent()           {}
func (RoomEvents) isEvent()           {}
func (RoomLeft) isEvent()             {}
func (Typing) isEvent()               {}
func (ReadReceipt) isEvent()          {}
func (MessagesAmended) isEvent()      {}

// The local data types are the store's; these aliases let apps import only package sdk.
type (
	Message      = store.Message
	Conversation = store.Conversation
	Pending      = store.Pending
	CursorState  = store.CursorState
	Direction    = store.Direction
	GroupCreate  = store.GroupCreate
)

// Paging directions of History, pending states and message flags (the store's values).
const (
	Older         = store.Older
	Newer         = store.Newer
	PendingQueued = store.PendingQueued
	PendingFailed = store.PendingFailed
	FlagRecalled  = contract.FlagRecalled
	FlagDeleted   = contract.FlagDeleted
	FlagEdited    = contract.FlagEdited
)
