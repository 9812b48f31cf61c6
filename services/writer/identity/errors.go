package identity

import (
	"errors"
	"strconv"
)

// Sentinel errors callers branch on. Typed errors below match them with errors.Is and carry the
// data an operator needs.
var (
	// ErrWindowExhausted: the installed HLC windows are used up (renewal did not land in time,
	// usually a Redis outage). The writer must stop committing; retrying later may succeed.
	ErrWindowExhausted = errors.New("identity: hlc window exhausted")
	// ErrNoWindow: Next before Start installed the first persisted window.
	ErrNoWindow = errors.New("identity: no hlc window installed")
	// ErrWindowOrder: a window that overlaps or precedes an installed one was offered.
	ErrWindowOrder = errors.New("identity: hlc window out of order")
	// ErrLeaseLost: the writer_id lease was lost, released, or could not be renewed before its
	// TTL could have run out. The writer must stop issuing ids with this writer_id.
	ErrLeaseLost = errors.New("identity: writer lease lost")
	// ErrLeaseHeld: the explicit writer_id is leased by another owner.
	ErrLeaseHeld = errors.New("identity: writer_id leased by another owner")
	// ErrNoFreeWriterID: every writer_id of the region in [0, max) is leased.
	ErrNoFreeWriterID = errors.New("identity: no free writer_id")
	// ErrAlreadyStarted: Start was called twice on one Issuer.
	ErrAlreadyStarted = errors.New("identity: issuer already started")
)

// WindowExhaustedError reports where the HLC stood when it refused to issue.
type WindowExhaustedError struct {
	WindowEnd uint64 // exclusive end (Unix ms) of the last installed window
	HLCMs     uint64 // the time_ms the next id would have had
	NowMs     int64  // the wall clock reading of the call
}

func (e *WindowExhaustedError) Error() string {
	b := make([]byte, 0, 96)
	b = append(b, ErrWindowExhausted.Error()...)
	b = append(b, ": window_end_ms="...)
	b = strconv.AppendUint(b, e.WindowEnd, 10)
	b = append(b, " hlc_ms="...)
	b = strconv.AppendUint(b, e.HLCMs, 10)
	b = append(b, " now_ms="...)
	b = strconv.AppendInt(b, e.NowMs, 10)
	return string(b)
}

// Is makes errors.Is(err, ErrWindowExhausted) true.
func (e *WindowExhaustedError) Is(target error) bool { return target == ErrWindowExhausted }

// WindowOrderError names the rejected window and the end it had to start at or above.
type WindowOrderError struct {
	Offered      Window
	MinimumStart uint64 // end of the last installed window
	Reason       string
}

func (e *WindowOrderError) Error() string {
	return ErrWindowOrder.Error() + ": " + e.Reason + ": offered " + e.Offered.String() +
		", must start at or above " + strconv.FormatUint(e.MinimumStart, 10)
}

// Is makes errors.Is(err, ErrWindowOrder) true.
func (e *WindowOrderError) Is(target error) bool { return target == ErrWindowOrder }

// LeaseHeldError names the explicit writer_id someone else holds.
type LeaseHeldError struct {
	Region   uint16
	WriterID uint16
}

func (e *LeaseHeldError) Error() string {
	return ErrLeaseHeld.Error() + ": region " + strconv.Itoa(int(e.Region)) + " writer_id " + strconv.Itoa(int(e.WriterID))
}

// Is makes errors.Is(err, ErrLeaseHeld) true.
func (e *LeaseHeldError) Is(target error) bool { return target == ErrLeaseHeld }

// NoFreeWriterIDError names the exhausted range.
type NoFreeWriterIDError struct {
	Region     uint16
	MaxWriters int
}

func (e *NoFreeWriterIDError) Error() string {
	return ErrNoFreeWriterID.Error() + ": region " + strconv.Itoa(int(e.Region)) + " has all " +
		strconv.Itoa(e.MaxWriters) + " writer_ids leased"
}

// Is makes errors.Is(err, ErrNoFreeWriterID) true.
func (e *NoFreeWriterIDError) Is(target error) bool { return target == ErrNoFreeWriterID }
