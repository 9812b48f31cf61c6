package contract

import "fmt"

// MessageType is the raw u32 message type. It is deliberately not a closed enum: a value this
// build does not know is carried end to end unchanged, so older servers relay newer clients'
// types. Only CONTROL changes server behaviour (not unread, not a session head by itself).
type MessageType uint32

const (
	MessageUnknown MessageType = 0
	MessageText    MessageType = 1
	MessageMedia   MessageType = 2
	MessageCustom  MessageType = 3
	MessageControl MessageType = 4
	// MessageSystem is an operator's or product backend's message (the admin API's POST
	// /v1/messages), sent as the product's system account: counted as unread like any other,
	// but no client can send one, so a client cannot pose as the system.
	MessageSystem MessageType = 5
)

func (t MessageType) String() string {
	switch t {
	case MessageUnknown:
		return "UNKNOWN"
	case MessageText:
		return "TEXT"
	case MessageMedia:
		return "MEDIA"
	case MessageCustom:
		return "CUSTOM"
	case MessageControl:
		return "CONTROL"
	case MessageSystem:
		return "SYSTEM"
	}
	return fmt.Sprintf("TYPE(%d)", uint32(t))
}

// ServerOnly reports whether only the server may produce messages of this type: a client SEND
// of one is refused with INVALID_ARGUMENT. CONTROL messages record membership changes; a client
// able to send one could forge "X joined" or "X was removed" in any conversation it can write to.
// SYSTEM messages come from the admin API; a client able to send one could pose as the system.
func (t MessageType) ServerOnly() bool { return t == MessageControl || t == MessageSystem }

// ServerOnlyMessageTypes lists every type ServerOnly refuses, for tests that must cover each.
func ServerOnlyMessageTypes() []MessageType { return []MessageType{MessageControl, MessageSystem} }

// CountsAsUnread reports whether a message of this type can be unread (CONTROL never is).
func (t MessageType) CountsAsUnread() bool { return t != MessageControl }

// RetentionClass selects a message's history retention.
type RetentionClass uint32

const (
	RetentionDefault        RetentionClass = 0 // HistoryRetention
	RetentionEphemeral24h   RetentionClass = 1 // EphemeralRetention
	RetentionComplianceHold RetentionClass = 2 // never expires
)

// KickReason tells a client why its connection was closed by the server.
type KickReason uint32

const (
	KickUnspecified KickReason = 0
	KickReplaced    KickReason = 1 // a newer login of the same user/device took over
	KickLoggedOut   KickReason = 2
	KickBanned      KickReason = 3
	KickServerDrain KickReason = 4
	// KickCredentialExpired: the token the session authenticated with reached its expiry;
	// the client reconnects with a fresh one.
	KickCredentialExpired KickReason = 5
	// KickByAdmin: an operator ended the session (the admin API's kick). The credential stays
	// valid: the client does not reconnect on its own, but a new sign-in is accepted.
	KickByAdmin KickReason = 6
)

// String is the reason's name in docs/protocol.md.
func (r KickReason) String() string {
	switch r {
	case KickReplaced:
		return "REPLACED"
	case KickLoggedOut:
		return "LOGGED_OUT"
	case KickBanned:
		return "BANNED"
	case KickServerDrain:
		return "SERVER_DRAIN"
	case KickCredentialExpired:
		return "CREDENTIAL_EXPIRED"
	case KickByAdmin:
		return "KICKED_BY_ADMIN"
	}
	return "UNSPECIFIED"
}

// EventType is the kind of a mailbox event. At most one event of each type exists per
// (user, mailbox_seq), which with the 8-entry cap bounds an event group.
type EventType uint32

const (
	EventUnspecified EventType = 0
	EventMessage     EventType = 1 // a message reference (body inline when small)
)
