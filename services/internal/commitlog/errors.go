package commitlog

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Sentinel errors callers branch on.
var (
	// ErrTopicMissing: the broker does not know the topic. Topics are created by deployment
	// (never auto-created by a producer), so this is a configuration error, not a transient one.
	ErrTopicMissing = errors.New("commitlog: topic does not exist")
	// ErrClosed: the producer or consumer was closed; a record handed in after Close fails with it.
	ErrClosed = errors.New("commitlog: closed")
	// ErrOutcomeUnknown: the caller stopped waiting (its context ended) while a record was in
	// flight. The record may or may not be in the log; the caller must treat the publish as
	// "info" and resume it, never as failed.
	ErrOutcomeUnknown = errors.New("commitlog: outcome unknown: stopped waiting for the broker's acknowledgement")
	// ErrBadKey: an Outbox key that is not a non-zero 16-byte message_id.
	ErrBadKey = errors.New("commitlog: outbox key must be a non-zero 16-byte message_id")
)

// PartitionCountError: the topic exists with a different partition count than the contract
// requires (the Outbox has exactly one; qim.dispatch has one per mailbox shard). Starting anyway
// would route records to partitions nobody consumes or reorder the Outbox.
type PartitionCountError struct {
	Topic string
	Want  int
	Got   int
}

func (e *PartitionCountError) Error() string {
	return fmt.Sprintf("commitlog: topic %s has %d partitions, want %d", e.Topic, e.Got, e.Want)
}

// PartitionNotReadyError: a partition has no leader or reports an error in metadata, so records
// for it would wait in the client buffer instead of being acknowledged.
type PartitionNotReadyError struct {
	Topic     string
	Partition int32
	Leader    int32
	Err       error // the broker's partition error, nil when only the leader is missing
}

func (e *PartitionNotReadyError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("commitlog: %s[%d] not ready (leader %d): %v", e.Topic, e.Partition, e.Leader, e.Err)
	}
	return fmt.Sprintf("commitlog: %s[%d] has no leader", e.Topic, e.Partition)
}

func (e *PartitionNotReadyError) Unwrap() error { return e.Err }

// OffsetOutOfRangeError: a consumer was asked to start where the log cannot justify it. Either
// the committed position lies outside [Low, High] (the log was trimmed past it, or the topic was
// recreated and is shorter), or there is no committed position and records below Low were
// already deleted by retention, so nobody can tell whether they were processed.
type OffsetOutOfRangeError struct {
	Topic        string // empty when returned by ValidateStart, which knows no topic
	Partition    int32
	Committed    int64 // meaningful only when HasCommitted
	HasCommitted bool
	Low, High    int64
}

func (e *OffsetOutOfRangeError) Error() string {
	where := ""
	if e.Topic != "" {
		where = fmt.Sprintf(" %s[%d]", e.Topic, e.Partition)
	}
	if !e.HasCommitted {
		return fmt.Sprintf("commitlog:%s no committed offset and the log starts at %d, not 0: "+
			"records were deleted by retention and may never have been processed; refusing to start", where, e.Low)
	}
	return fmt.Sprintf("commitlog:%s committed offset %d outside the log [%d, %d]; refusing to start",
		where, e.Committed, e.Low, e.High)
}

// FetchError: a partition failed while consuming (data loss detected, offset out of range with
// resets disabled, topic deleted, authorization). The consumer does not recover by itself: the
// caller restarts from its own durable position.
type FetchError struct {
	Topic     string
	Partition int32
	Err       error
}

func (e *FetchError) Error() string {
	return fmt.Sprintf("commitlog: fetch %s[%d]: %v", e.Topic, e.Partition, e.Err)
}

func (e *FetchError) Unwrap() error { return e.Err }

// RecordTooLargeError: key+value exceed the producer's MaxRecordBytes. Returned before anything
// is sent: the broker would reject the record anyway, and a writer must learn it before it
// reserves a commit that could never be published.
type RecordTooLargeError struct {
	Size, Max int
}

func (e *RecordTooLargeError) Error() string {
	return fmt.Sprintf("commitlog: record of %d bytes exceeds the %d-byte limit", e.Size, e.Max)
}

// MessageSizeLimitError: the topic's max.message.bytes is below what the producer may send, so
// some records would be rejected by the broker only after a commit was reserved.
type MessageSizeLimitError struct {
	Topic    string
	TopicMax int64 // the topic's effective max.message.bytes
	Need     int64 // MaxRecordBytes plus framing overhead
}

func (e *MessageSizeLimitError) Error() string {
	return fmt.Sprintf("commitlog: topic %s max.message.bytes is %d, the producer needs %d: "+
		"raise the topic's max.message.bytes or lower MaxRecordBytes", e.Topic, e.TopicMax, e.Need)
}

// StartOffsetError: the first record a partition returned is not at the start offset the
// consumer was given. franz-go bounds an exact start offset into the log (a start below the log
// start silently begins at the log start; one past the end begins at the end), so this is how a
// position the log cannot serve shows up after ValidateStart was skipped or raced retention.
type StartOffsetError struct {
	Topic     string
	Partition int32
	Want, Got int64
}

func (e *StartOffsetError) Error() string {
	return fmt.Sprintf("commitlog: %s[%d] asked to start at %d but the log served %d first; refusing to continue",
		e.Topic, e.Partition, e.Want, e.Got)
}

// Refused reports whether err, returned by a start-up check, is a refusal that waiting cannot
// change: the deployment contradicts the contract (a missing or mis-partitioned topic, a record
// size limit too small, a topic that is not compacted, a position the log cannot justify), the
// client's own configuration is invalid, or the broker answered with a non-retriable error
// (authorization, an invalid request). Everything else — no broker answering, a broker just
// resumed whose metadata lists none while the controller still fences it, a partition without a
// leader, a coordinator loading, a timeout — may clear by itself, and start-up waits for it
// within a bound (lifecycle.Await).
func Refused(err error) bool {
	var (
		pc  *PartitionCountError
		ms  *MessageSizeLimitError
		nc  *NotCompactedError
		oor *OffsetOutOfRangeError
		so  *StartOffsetError
		ke  *kerr.Error
	)
	switch {
	case errors.Is(err, ErrTopicMissing), errors.Is(err, ErrConfig), errors.Is(err, ErrBadKey):
		return true
	case errors.As(err, &pc), errors.As(err, &ms), errors.As(err, &nc), errors.As(err, &oor), errors.As(err, &so):
		return true
	case errors.As(err, &ke):
		return !ke.Retriable
	}
	return false
}
