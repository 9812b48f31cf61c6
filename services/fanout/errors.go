package fanout

import (
	"errors"
	"fmt"
)

// Sentinels wrapped by *RecordError, for callers that branch on why a record stopped fanout.
var (
	// ErrUndecodable: the Outbox value is not a CommittedEnvelope.
	ErrUndecodable = errors.New("fanout: outbox record is not a decodable CommittedEnvelope")
	// ErrOffsetOrder: the consumer returned an offset at or below one already planned. Planning
	// it would dispatch one record twice within a run or commit a position that moves backwards.
	ErrOffsetOrder = errors.New("fanout: outbox offsets out of order")
	// ErrBadPlan: the planner returned something that cannot be produced (no dispatch, or a
	// shard outside the configured count). It never happens with dispatch.Plan; it is checked
	// because producing it would misroute or drop a committed message.
	ErrBadPlan = errors.New("fanout: plan cannot be produced")
)

// RecordError stops the FanoutCoordinator: the Outbox record at Offset cannot be turned into
// dispatches. Skipping it would lose a committed message, so the service stops with the offset
// committed below it, and an operator decides (fix the planner, or repair the record).
type RecordError struct {
	Topic  string
	Offset int64
	Err    error // ErrUndecodable, ErrOffsetOrder, ErrBadPlan, or dispatch.ErrUnplannable
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("fanout: stopped at %s offset %d (nothing at or after it was dispatched or committed): %v",
		e.Topic, e.Offset, e.Err)
}

func (e *RecordError) Unwrap() error { return e.Err }

// StartError: start-up refused to consume, naming the topic and the check that failed (a missing
// or mis-partitioned topic, or a committed position the log cannot justify — then Err is a
// *commitlog.OffsetOutOfRangeError carrying the offsets).
type StartError struct {
	Topic string
	Err   error
}

func (e *StartError) Error() string {
	return fmt.Sprintf("fanout: refusing to start on %s: %v", e.Topic, e.Err)
}

func (e *StartError) Unwrap() error { return e.Err }
