package contract

import "fmt"

// ErrorCode is the only source of client-visible error codes. Services map their internal errors
// onto these; no other package may invent a numeric code. Values are frozen once shipped.
type ErrorCode uint32

const (
	ErrCodeUnspecified     ErrorCode = 0
	ErrCodeInvalidArgument ErrorCode = 1
	ErrCodeUnauthorized    ErrorCode = 2
	ErrCodePayloadTooLarge ErrorCode = 3
	ErrCodeRateLimited     ErrorCode = 4
	ErrCodeNotMember       ErrorCode = 5
	ErrCodeCursorExpired   ErrorCode = 6
	ErrCodeMailboxDirty    ErrorCode = 7
	ErrCodeConflict        ErrorCode = 8
	ErrCodeUnavailable     ErrorCode = 9
	ErrCodeInternal        ErrorCode = 10
	ErrCodeUnimplemented   ErrorCode = 11
	ErrCodeGroupFull       ErrorCode = 12
	ErrCodeRejected        ErrorCode = 13
	ErrCodeForbidden       ErrorCode = 14
)

// ErrorInfo is one row of the error-code table.
type ErrorInfo struct {
	Code ErrorCode
	Name string
	// Retryable tells clients whether the same request may be sent again unchanged. A retry of a
	// SEND is always safe for the server (idempotency key), this flag is about whether it can help.
	Retryable bool
	Meaning   string
	// SentBy names the requests this server version answers with the code; empty means it never
	// sends it (the code is reserved, and a client still handles it). contract tests hold it to
	// the services' sources. Whether an ERROR is the connection's last frame is not a property of
	// the code but of the condition: ProtocolCases lists those conditions.
	SentBy string
}

var errorTable = []ErrorInfo{
	{ErrCodeInvalidArgument, "INVALID_ARGUMENT", false,
		"malformed or out-of-range request field (zero client_message_id, bad cursor, ...), or a SEND of a server-only message_type (CONTROL, SYSTEM)",
		"any request after AUTH_OK, including a second AUTH and a SEND or PING that is not valid protobuf"},
	{ErrCodeUnauthorized, "UNAUTHORIZED", false,
		"missing, expired or forged credentials, or a request before AUTH",
		"the first frame of a connection, when it is not AUTH or the AUTH is refused"},
	{ErrCodePayloadTooLarge, "PAYLOAD_TOO_LARGE", false,
		"body, custom_type, request or frame above its contract limit",
		"a frame or message above 4 MiB (request id 0), a request other than SEND above 64 KiB, a SEND whose body or custom_type is too long"},
	{ErrCodeRateLimited, "RATE_LIMITED", true,
		"sender exceeded its rate, or a membership change lost three races in a row; retry after a delay",
		"SEND above a rate limit of its connection, sender or tenant, with retry_after_ms; CREATE_GROUP, LEAVE_GROUP, GroupAdmin ADD and REMOVE (membership changing concurrently)"},
	{ErrCodeNotMember, "NOT_MEMBER", false,
		"sender or reader is outside the conversation's membership interval", "SEND, PULL_HISTORY, MARK_READ, PULL_MEMBERS, LEAVE_GROUP"},
	{ErrCodeCursorExpired, "CURSOR_EXPIRED", false,
		"device cursor is behind the mailbox trim watermark; client must REBUILD (this server says so in MailboxBatch.cursor_expired instead)", ""},
	{ErrCodeMailboxDirty, "MAILBOX_DIRTY", true,
		"mailbox shard is not materialized up to a consistent watermark yet", ""},
	{ErrCodeConflict, "CONFLICT", false,
		"idempotency key reused with different content, or a lost race on a versioned write", "SEND, CREATE_GROUP"},
	{ErrCodeUnavailable, "UNAVAILABLE", true,
		"a dependency is down or the request timed out; outcome of a SEND is unknown until retried",
		"AUTH, SEND, PULL_MAILBOX, PULL_HISTORY, PULL_SESSION_LIST, MARK_READ, CREATE_GROUP, PULL_MEMBERS, LEAVE_GROUP"},
	{ErrCodeInternal, "INTERNAL", true,
		"server invariant failure; reported and counted",
		"SEND, PULL_MAILBOX, PULL_HISTORY, PULL_SESSION_LIST, MARK_READ, CREATE_GROUP, PULL_MEMBERS, LEAVE_GROUP (also a response too large for one message)"},
	{ErrCodeUnimplemented, "UNIMPLEMENTED", false,
		"request defined by the contract but not served by this server version",
		"opcodes the opcode table marks not served, unknown opcodes, PULL_HISTORY of a ROOM conversation"},
	{ErrCodeGroupFull, "GROUP_FULL", false,
		"the change would take a group past contract.GroupMaxMembers (1,000) current members",
		"CREATE_GROUP, GroupAdmin ADD"},
	{ErrCodeRejected, "REJECTED", false,
		"the product's moderation hook refused the message; ErrorFrame.reason carries its reason code",
		"SEND (a deployment with a moderation hook)"},
	{ErrCodeForbidden, "FORBIDDEN", false,
		"the request is valid but its sender may not do it: amending another user's message, a recall after the recall window, editing a recalled or deleted message",
		"SEND with an amendment (ADR-0037)"},
}

var errorIndex = func() map[ErrorCode]ErrorInfo {
	m := make(map[ErrorCode]ErrorInfo, len(errorTable))
	for _, info := range errorTable {
		if _, dup := m[info.Code]; dup {
			panic(fmt.Sprintf("contract: error code %d listed twice", info.Code))
		}
		m[info.Code] = info
	}
	return m
}()

// ErrorCodes returns a copy of the error-code table.
func ErrorCodes() []ErrorInfo { return append([]ErrorInfo(nil), errorTable...) }

// Lookup returns the table row of c, or false for a code the contract does not define.
func (c ErrorCode) Lookup() (ErrorInfo, bool) {
	info, ok := errorIndex[c]
	return info, ok
}

func (c ErrorCode) String() string {
	if info, ok := errorIndex[c]; ok {
		return info.Name
	}
	return fmt.Sprintf("ERROR_CODE(%d)", uint32(c))
}
