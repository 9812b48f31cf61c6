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
)

// ErrorInfo is one row of the error-code table.
type ErrorInfo struct {
	Code ErrorCode
	Name string
	// Retryable tells clients whether the same request may be sent again unchanged. A retry of a
	// SEND is always safe for the server (idempotency key), this flag is about whether it can help.
	Retryable bool
	Meaning   string
}

var errorTable = []ErrorInfo{
	{ErrCodeInvalidArgument, "INVALID_ARGUMENT", false, "malformed or out-of-range request field (zero client_message_id, bad cursor, ...)"},
	{ErrCodeUnauthorized, "UNAUTHORIZED", false, "missing, expired or forged credentials, or a request before AUTH"},
	{ErrCodePayloadTooLarge, "PAYLOAD_TOO_LARGE", false, "body, custom_type or frame above its contract limit"},
	{ErrCodeRateLimited, "RATE_LIMITED", true, "sender exceeded its rate; retry after the hinted delay"},
	{ErrCodeNotMember, "NOT_MEMBER", false, "sender or reader is outside the conversation's membership interval"},
	{ErrCodeCursorExpired, "CURSOR_EXPIRED", false, "device cursor is behind the mailbox trim watermark; client must REBUILD"},
	{ErrCodeMailboxDirty, "MAILBOX_DIRTY", true, "mailbox shard is not materialized up to a consistent watermark yet"},
	{ErrCodeConflict, "CONFLICT", false, "idempotency key reused with different content, or a lost race on a versioned write"},
	{ErrCodeUnavailable, "UNAVAILABLE", true, "a dependency is down or the request timed out; outcome of a SEND is unknown until retried"},
	{ErrCodeInternal, "INTERNAL", true, "server invariant failure; reported and counted"},
	{ErrCodeUnimplemented, "UNIMPLEMENTED", false, "opcode defined by the contract but not served (READ_SYNC)"},
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
