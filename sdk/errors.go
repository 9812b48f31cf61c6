package sdk

import (
	"errors"
	"fmt"
	"time"

	"github.com/qim-dev/qim/contract"
)

var (
	// ErrClosed is returned by every method after Close.
	ErrClosed = errors.New("sdk: client closed")
	// ErrConnected is returned by Connect while a connection loop is already running.
	ErrConnected = errors.New("sdk: already connected")
	// ErrOffline is returned when a request needs the server and there is no reconciled
	// connection (History falls back to the local store instead of returning it).
	ErrOffline = errors.New("sdk: not connected")
	// ErrUnauthorized ends the connection loop: the server refused the token. Reconnecting with
	// the same credential cannot help; Connect again once the token source has a new one.
	ErrUnauthorized = errors.New("sdk: credentials refused")
	// ErrKicked ends the connection loop after KICKED{REPLACED, LOGGED_OUT, BANNED,
	// KICKED_BY_ADMIN}: a replaced device must not reconnect on its own, or two devices would
	// evict each other forever, and an operator's kick would be undone at once.
	ErrKicked = errors.New("sdk: kicked by the server")
	// ErrRevoked is the Failed.Err of a queued send after the server revoked this installation's
	// credential (KICKED LOGGED_OUT or BANNED): the connection loop has stopped for good, so
	// nothing would ever send it.
	ErrRevoked = errors.New("sdk: credential revoked; the send will not be made")
	// ErrIdentity ends the connection loop when AUTH_OK names another user than the store's:
	// applying that user's mailbox to this store would mix two accounts.
	ErrIdentity = errors.New("sdk: server authenticated another user than the store's")
	// ErrPendingExpired is the Failed.Err of a send that stayed pending for longer than
	// contract.ClientPendingMaxAge; it is never sent again.
	ErrPendingExpired = errors.New("sdk: pending send expired")
	// ErrProtocol is wrapped by connection errors caused by a frame that breaks the protocol
	// (a cursor that moves back, a malformed id); the connection is dropped and re-established.
	ErrProtocol = errors.New("sdk: protocol violation")
	// ErrInvalid is wrapped by errors about arguments, whether the SDK found the fault or the
	// server did (a *ServerError with INVALID_ARGUMENT matches it too, see ServerError.Is).
	ErrInvalid = errors.New("sdk: invalid argument")
	// ErrNotMember: the user is not a current member of the group (a send, PULL_MEMBERS or
	// LEAVE_GROUP), or is banned from a room (JoinRoom, SendRoom) or muted in it (SendRoom); a
	// *ServerError with NOT_MEMBER matches it.
	ErrNotMember = errors.New("sdk: not a member of the group")
	// ErrGroupFull: the group would have more than contract.GroupMaxMembers members (CreateGroup
	// checks it before recording the request; a *ServerError with GROUP_FULL matches it too).
	ErrGroupFull = errors.New("sdk: group full")
	// ErrRoomJoined: JoinRoom of a room already in the joined set (joined, rejoining, or with
	// its leave not answered yet).
	ErrRoomJoined = errors.New("sdk: room already joined")
	// ErrTooManyRooms: a connection may be joined to contract.MaxJoinedRoomsPerConnection rooms
	// (JoinRoom checks it first; a *ServerError with RATE_LIMITED answering JOIN_ROOM matches it).
	ErrTooManyRooms = errors.New("sdk: joined to the most rooms a connection may hold")
	// ErrUnimplemented: the server does not offer the request (a deployment without RoomWriters
	// answers rooms so; a *ServerError with UNIMPLEMENTED matches it). Retrying cannot help.
	ErrUnimplemented = errors.New("sdk: not offered by this server")
	// ErrForbidden: the server refused the request to this user (FORBIDDEN): an amendment of
	// someone else's message, a recall past its window, group receipts while withholding one's own
	// (SetReadReceipts); a *ServerError with FORBIDDEN matches it.
	ErrForbidden = errors.New("sdk: forbidden")
	// errDead is the connection error when a probe went unanswered.
	errDead = fmt.Errorf("sdk: connection unresponsive for %s", contract.UnavailableDetectMax)
)

// ServerError is an ERROR frame answering one of this client's requests.
type ServerError struct {
	Op         contract.Opcode // the request's opcode
	Code       contract.ErrorCode
	Message    string
	RetryAfter time.Duration // the server's hint; 0 = none
	// Reason is the product's reason code of a REJECTED send (its moderation hook's, e.g.
	// "spam"), for the app to show; "" otherwise.
	Reason string
}

func (e *ServerError) Error() string {
	return fmt.Sprintf("sdk: server answered %s with %s: %s", e.Op, e.Code, e.Message)
}

// Is lets callers branch on the codes they can act on with errors.Is, whatever request the
// server refused: INVALID_ARGUMENT is ErrInvalid, NOT_MEMBER ErrNotMember, GROUP_FULL
// ErrGroupFull, UNIMPLEMENTED ErrUnimplemented, FORBIDDEN ErrForbidden, RATE_LIMITED answering JOIN_ROOM ErrTooManyRooms.
// errors.As with *ServerError gives the code itself.
func (e *ServerError) Is(target error) bool {
	switch target {
	case ErrInvalid:
		return e.Code == contract.ErrCodeInvalidArgument
	case ErrNotMember:
		return e.Code == contract.ErrCodeNotMember
	case ErrGroupFull:
		return e.Code == contract.ErrCodeGroupFull
	case ErrUnimplemented:
		return e.Code == contract.ErrCodeUnimplemented
	case ErrForbidden:
		return e.Code == contract.ErrCodeForbidden
	case ErrTooManyRooms:
		return e.Code == contract.ErrCodeRateLimited && e.Op == contract.OpJoinRoom
	}
	return false
}

// Retryable reports whether sending the same request again can help. Unknown codes are not
// retryable (qim.v1 ErrorFrame).
func (e *ServerError) Retryable() bool {
	info, ok := e.Code.Lookup()
	return ok && info.Retryable
}
