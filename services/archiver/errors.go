package archiver

import (
	"errors"
	"fmt"
)

// Sentinels wrapped by *RecordError, for callers that branch on why a record stopped archiving.
var (
	// ErrUndecodable: the Outbox value is not a CommittedEnvelope with an archivable record.
	ErrUndecodable = errors.New("archiver: outbox record is not an archivable CommittedEnvelope")
	// ErrOffsetOrder: the consumer returned an offset at or below one already archived.
	ErrOffsetOrder = errors.New("archiver: outbox offsets out of order")
	// ErrSeqReused: two records of one batch claim one (conversation, conversation_seq) with
	// different content. Archiving either would let a plain INSERT overwrite the other
	// (invariant 3: a seq is never handed out twice); the archiver stops instead of choosing.
	ErrSeqReused = errors.New("archiver: one conversation_seq claimed by two messages")
)

// RecordError stops the HistoryArchiver: the Outbox record at Offset cannot be archived.
// Skipping it would lose a committed message from the archive, so the service stops with its
// position below it, and an operator decides.
type RecordError struct {
	Topic  string
	Offset int64
	Err    error
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("archiver: stopped at %s offset %d (nothing at or after it was committed): %v", e.Topic, e.Offset, e.Err)
}

func (e *RecordError) Unwrap() error { return e.Err }

// StartError: start-up refused, naming what failed (the Outbox's partitions, a position the log
// cannot justify, or the archive's schema).
type StartError struct {
	What string
	Err  error
}

func (e *StartError) Error() string {
	return fmt.Sprintf("archiver: refusing to start on %s: %v", e.What, e.Err)
}

func (e *StartError) Unwrap() error { return e.Err }
