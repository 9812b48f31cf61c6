package store

import "github.com/qim-dev/qim/contract"

// Source says how a message reached the store. It is informational (debugging, tests); every
// source is deduplicated by message_id the same way.
type Source uint8

const (
	SourcePush    Source = 1 // PUSH_EVENTS: stored for low latency, never moves the cursor
	SourcePull    Source = 2 // MAILBOX_BATCH: the only source that moves the cursor
	SourceHistory Source = 3 // HISTORY_BATCH (paging or REBUILD backfill)
	SourceAck     Source = 4 // SEND_ACK of this device's own pending send
)

func (s Source) String() string {
	switch s {
	case SourcePush:
		return "push"
	case SourcePull:
		return "pull"
	case SourceHistory:
		return "history"
	case SourceAck:
		return "ack"
	}
	return "unknown"
}

// Message is a committed message as the device stores it.
type Message struct {
	ID           contract.MessageID
	Conversation contract.ConversationID
	Seq          contract.ConversationSeq
	Sender       contract.UserID
	Type         contract.MessageType // raw value, unknown values preserved
	CustomType   string
	// HasBody is false when the mailbox did not inline the body (fetch it with History) or the
	// message was recalled/deleted; Body is then empty.
	HasBody bool
	Body    []byte
	// ClientMessageID is set on the user's own messages only (the reconciliation anchor).
	ClientMessageID contract.ClientMessageID
	SentAtMs        int64
	Flags           uint32 // bit 0 recalled, bit 1 deleted, bit 2 edited (Body is the newest edit)
	Source          Source
	// Amend is set on an amendment CONTROL message (custom_type contract.AmendCustomType): what
	// it does to its target, which Apply changes in the store. Not stored itself.
	Amend *Amend
}

// Flag bits of Message.Flags (qim.v1 HistoryMessage.flags).
const (
	FlagRecalled = contract.FlagRecalled
	FlagDeleted  = contract.FlagDeleted
	FlagEdited   = contract.FlagEdited
)

// Conversation is one conversation of the local session list, with absolute values.
type Conversation struct {
	ID   contract.ConversationID
	Kind contract.ConversationKind
	Peer contract.UserID // the other user of a direct conversation; 0 while unknown
	// Group is the group of a GROUP conversation (the same 16 bytes as ID); zero otherwise.
	Group contract.ConversationID
	// LatestSeq is the newest seq the device knows of (CONTROL messages included): of a stored
	// message, or the server's for a conversation only the session list revealed.
	// LatestMessageID is the row's head: the newest message that may head it, which a CONTROL
	// message never does by itself; zero when there is none yet (a group with only its CREATE).
	LatestSeq       contract.ConversationSeq
	LatestMessageID contract.MessageID
	LastActivityMs  int64
	// ReadSeq is the read watermark: messages at or below it are read. It starts at 0 and only
	// moves forward (MarkRead, an own message — sending is reading —, or the user's server-side
	// watermark from the session list or a MARK_READ_ACK, which other devices may have raised).
	ReadSeq contract.ConversationSeq
	// Unread = |{m : m.seq > ReadSeq ∧ m.sender ≠ self}| over local messages (CONTROL, recalled
	// and deleted messages never count), exact up to contract.UnreadExactWindow and saturated
	// beyond (UnreadExact false), like the server's session list. Before a sync completes it is a
	// lower bound: local data is a subset of the server's.
	Unread      uint32
	UnreadExact bool
	// Incomplete is true after a REBUILD until the history backfill of this conversation has
	// finished: messages after GapFromSeq may be missing locally.
	Incomplete bool
	GapFromSeq contract.ConversationSeq
}

// PendingState is the state of a local send.
type PendingState uint8

const (
	// PendingQueued: not known to be committed; sent (again) whenever the device is online and
	// reconciled. Retrying is always safe: the client_message_id makes it idempotent.
	PendingQueued PendingState = 0
	// PendingFailed: the server rejected it definitely (or it outlived
	// contract.ClientPendingMaxAge); it is never resent and never visible to others.
	PendingFailed PendingState = 1
)

// Pending is one local send that is not (yet) a committed message.
type Pending struct {
	ClientMessageID contract.ClientMessageID
	Ordinal         uint64
	// Conversation is the target: a direct conversation with Peer, or a GROUP conversation (its
	// id is the group id; Peer is 0 then).
	Conversation contract.ConversationID
	Peer         contract.UserID
	Type         contract.MessageType
	CustomType   string
	Body         []byte
	Mentions     []contract.UserID
	CreatedAtMs  int64
	State        PendingState
	ErrorCode    contract.ErrorCode
	ErrorText    string
}

// NewPending is what Send records: exactly one of Peer (a direct message) and Group (a group
// message; a GROUP conversation id) is set.
type NewPending struct {
	Peer       contract.UserID
	Group      contract.ConversationID
	Type       contract.MessageType
	CustomType string
	Body       []byte
	Mentions   []contract.UserID
	NowMs      int64
}

// CursorState is the device's mailbox position.
type CursorState struct {
	// Seq is the highest mailbox_seq whose batch is durably applied; 0 = nothing yet.
	Seq contract.MailboxSeq
	// Generation counts cursor resets (REBUILD). A position is only meaningful together with its
	// generation: a reset starts a new one instead of silently reusing old positions.
	Generation      uint64
	UpdatedAtMs     int64
	LastResetReason string
}

// Resolved is a pending send that became a committed message.
type Resolved struct {
	ClientMessageID contract.ClientMessageID
	Message         Message
}

// Ack is a SEND_ACK, the proof that a pending send is committed.
type Ack struct {
	ClientMessageID contract.ClientMessageID
	MessageID       contract.MessageID
	Conversation    contract.ConversationID
	Seq             contract.ConversationSeq
	CommittedAtMs   int64
	// Amend: the ack is an amendment's (the pending send was one), applied with it.
	Amend *Amend
}

// Gap is a conversation whose local history may be missing messages after FromSeq.
type Gap struct {
	Conversation contract.ConversationID
	FromSeq      contract.ConversationSeq
}

// GapUpdate moves or closes a conversation's gap after a backfill page.
type GapUpdate struct {
	Conversation contract.ConversationID
	FromSeq      contract.ConversationSeq // new anchor when !Done
	Done         bool
}

// Batch is one unit the SDK applies atomically.
type Batch struct {
	Source   Source
	Messages []Message
	// Cursor, for a MAILBOX_BATCH only, is its next_cursor: stored in the same transaction as the
	// messages, forward only.
	Cursor *contract.MailboxSeq
	// Gap, for a REBUILD backfill page, moves the conversation's gap anchor in the same
	// transaction as the page's messages, so a crash resumes the backfill where it stopped.
	Gap *GapUpdate
}

// Applied reports what a Batch changed. Conversations carries the absolute state of every
// conversation the batch touched, so callers overwrite rather than add.
type Applied struct {
	Added         []Message  // newly stored messages that did not resolve an own pending send
	Amended       []Message  // stored messages this batch's amendments changed, as now stored
	Resolved      []Resolved // own pending sends resolved by this batch
	Conversations []Conversation
	Cursor        CursorState
	// Known counts messages that were already stored (duplicates by message_id).
	Known int
}
