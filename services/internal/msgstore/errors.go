package msgstore

import (
	"errors"
	"fmt"
	"strings"

	"github.com/qim-dev/qim/services/internal/rpc"

	"github.com/qim-dev/qim/contract"
)

// Sentinel errors callers branch on (use errors.Is; the typed errors below match them).
var (
	// ErrIdentityConflict: the idempotency key is taken by a request with another identity. The
	// writer rejects the send; it must never overwrite or re-plan the stored commit.
	ErrIdentityConflict = errors.New("msgstore: idempotency key already used by a different request")
	// ErrCorrupt: stored state disagrees with itself (a missing or undecodable history record, a
	// history record that differs from its commit, a malformed commit hash). Fail closed.
	// It wraps rpc.ErrCorrupt, so every service answers it INTERNAL through rpc.CodeOf.
	ErrCorrupt = fmt.Errorf("msgstore: %w", rpc.ErrCorrupt)
	// ErrNotRecorded: MarkCommitted on a RESERVED commit; Record must run first.
	ErrNotRecorded = errors.New("msgstore: commit is reserved but not recorded")
	// ErrNotFound: no commit under the key (never reserved, or forgotten after the window).
	ErrNotFound = errors.New("msgstore: no commit under this key")
	// ErrInvalidArgument: the request was refused before anything was written.
	ErrInvalidArgument = errors.New("msgstore: invalid argument")
	// ErrSeqExhausted: the conversation's counter reached 2^53, the largest seq the scripts
	// handle exactly. Nothing was written.
	ErrSeqExhausted = errors.New("msgstore: conversation_seq space exhausted")
	// ErrNotMember: a group send from a user whose membership is not open. Nothing was written.
	ErrNotMember = errors.New("msgstore: sender is not a current member of the group")
	// ErrNoGroup: the group conversation has no membership (never created). Nothing was written.
	ErrNoGroup = errors.New("msgstore: no such group")
	// ErrGroupExists: CREATE of a group that exists (its creating commit was forgotten after the
	// idempotency window, or another request created it). Nothing was written.
	ErrGroupExists = errors.New("msgstore: group exists")
	// ErrMembershipChanged: the group is no longer at the version a change was planned at; the
	// caller re-plans from a fresh read. Nothing was written.
	ErrMembershipChanged = errors.New("msgstore: membership changed since the change was planned")
	// ErrGroupFull: the change would take the group past its member cap. Nothing was written.
	ErrGroupFull = errors.New("msgstore: group would exceed its member cap")
)

// IdentityConflictError carries the commit that owns the key, so the writer can report what the
// client_message_id is already bound to. It matches ErrIdentityConflict.
type IdentityConflictError struct {
	Key       CommitKey
	State     State
	MessageID contract.MessageID
	Seq       contract.ConversationSeq
}

func (e *IdentityConflictError) Error() string {
	return fmt.Sprintf("msgstore: idempotency key already used by a different request (message_id %s, conversation_seq %d, %s)",
		e.MessageID, e.Seq, e.State)
}

// Is makes errors.Is(err, ErrIdentityConflict) true.
func (e *IdentityConflictError) Is(target error) bool { return target == ErrIdentityConflict }

// CorruptError names where corruption was found. Seq is 0 when the finding is not about one
// history record. It matches ErrCorrupt.
type CorruptError struct {
	Tenant       contract.TenantID
	Conversation contract.ConversationID
	Seq          uint64
	Reason       string
}

func (e *CorruptError) Error() string {
	if e.Seq == 0 {
		return fmt.Sprintf("msgstore: corrupt stored state in conversation %s: %s", e.Conversation, e.Reason)
	}
	return fmt.Sprintf("msgstore: corrupt stored state in conversation %s at conversation_seq %d: %s",
		e.Conversation, e.Seq, e.Reason)
}

// Unwrap makes errors.Is(err, ErrCorrupt) (and so rpc.ErrCorrupt) true.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// scriptError maps a script's error reply ("CLASS message") to the package's errors; anything
// else (an unexpected server error) is wrapped as is. op names the operation for context.
func scriptError(op string, k CommitKey, err error) error {
	msg := err.Error()
	class, detail, _ := strings.Cut(msg, " ")
	switch class {
	case "QIMINVAL":
		return fmt.Errorf("%w: %s: %s", ErrInvalidArgument, op, detail)
	case "QIMCORRUPT":
		return fmt.Errorf("msgstore: %s: %w", op,
			&CorruptError{Tenant: k.Tenant, Conversation: k.Conversation, Reason: detail})
	case "QIMNOTREC":
		return fmt.Errorf("%w: %s", ErrNotRecorded, op)
	case "QIMNOTFOUND":
		return fmt.Errorf("%w: %s", ErrNotFound, op)
	case "QIMCONFLICT":
		return fmt.Errorf("%w: %s: %s", ErrIdentityConflict, op, detail)
	case "QIMSEQ":
		return fmt.Errorf("%w: %s", ErrSeqExhausted, op)
	case "QIMNOTMEMBER":
		return fmt.Errorf("%w: %s", ErrNotMember, op)
	case "QIMNOGROUP":
		return fmt.Errorf("%w: %s", ErrNoGroup, op)
	case "QIMEXISTS":
		return fmt.Errorf("%w: %s", ErrGroupExists, op)
	case "QIMVERSION":
		return fmt.Errorf("%w: %s: %s", ErrMembershipChanged, op, detail)
	case "QIMFULL":
		return fmt.Errorf("%w: %s: %s", ErrGroupFull, op, detail)
	}
	return fmt.Errorf("msgstore: %s: %w", op, err)
}
