package store

import (
	"errors"
	"fmt"

	"github.com/qim-dev/qim/contract"
)

var (
	// ErrNoDataDir is returned by Path and Open for an empty or relative data directory: a
	// production store must live at a stable path, never in memory.
	ErrNoDataDir = errors.New("store: a stable absolute data directory is required")
	// ErrIdentity is returned when a store file belongs to another endpoint, tenant or user than
	// the one opening it; using it would mix two accounts' cursors and messages.
	ErrIdentity = errors.New("store: database belongs to another identity")
	// ErrSchema is returned for a database written by a newer SDK (or damaged).
	ErrSchema = errors.New("store: unsupported schema version")
	// ErrOrdinalsExhausted is returned when the ordinal space is used up; ids never wrap.
	ErrOrdinalsExhausted = errors.New("store: client_message_id ordinals exhausted")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("store: closed")
	// ErrInvalid is wrapped by errors about malformed input (zero ids, bit 63 set, ...).
	ErrInvalid = errors.New("store: invalid input")
)

// CursorRegressionError is returned when a batch would move the cursor backwards. The batch is
// not applied: a cursor that moves back re-downloads at best and hides a server fault at worst.
type CursorRegressionError struct {
	Stored, Offered contract.MailboxSeq
}

func (e *CursorRegressionError) Error() string {
	return fmt.Sprintf("store: cursor would move back from %#x to %#x", uint64(e.Stored), uint64(e.Offered))
}

// SeqConflictError is returned when two different messages claim one (conversation, seq): the
// contract assigns a conversation_seq once, so this is a server fault or a corrupt store, and
// the batch is refused rather than one message silently dropped.
type SeqConflictError struct {
	Conversation contract.ConversationID
	Seq          contract.ConversationSeq
	Stored, New  contract.MessageID
}

func (e *SeqConflictError) Error() string {
	return fmt.Sprintf("store: conversation %s seq %d holds message %s, batch offers %s",
		e.Conversation, e.Seq, e.Stored, e.New)
}
