package audit

import (
	"errors"
	"fmt"
	"time"
)

// Kind names a failure (or, for NotYet, an unverified state) an example belongs to.
type Kind string

// Failure kinds. Every count of these must be 0 for a pass.
const (
	// KindCommittedWithoutDispatch: a committed record whose dispatch to a target shard is in no
	// dispatch partition read (the loss the audit exists for: "in the log but not dispatched").
	KindCommittedWithoutDispatch Kind = "committed_without_dispatch"
	// KindDispatchWithoutCommit: a dispatch whose message is not committed at the Outbox offset it
	// names (its source_offset), or that names an offset past the Outbox end.
	KindDispatchWithoutCommit Kind = "dispatch_without_commit"
	// KindMismatch: a dispatch whose identity, coordinates, sender, recipients or content disagree
	// with the committed record (or, for a second copy of a dispatch_id, with the first copy).
	KindMismatch Kind = "mismatch"
	// KindWrongPartition: a dispatch on another partition than the shard it names.
	KindWrongPartition Kind = "wrong_partition"
	// KindNotMaterialized: a dispatched entry the watermark covers that is not in its recipient's
	// mailbox and is not gone by retention or trim ("dispatched but not materialized").
	KindNotMaterialized Kind = "not_materialized"
	// KindNotYet: an entry above its shard's watermark. Not a loss, but not verified either, so it
	// fails a pass: the caller waits for the watermarks first (WaitCaughtUp).
	KindNotYet Kind = "not_yet_materialized"
)

// failureKinds lists the kinds whose count must be zero, in report order.
var failureKinds = []Kind{KindCommittedWithoutDispatch, KindDispatchWithoutCommit, KindMismatch,
	KindWrongPartition, KindNotMaterialized, KindNotYet}

// Counts are what the audit saw. Dispatch-pass counts are in dispatches (one per message and
// target shard); materialization counts are in entries (one per dispatch and recipient).
type Counts struct {
	OutboxRecords      int64 `json:"outbox_records"`      // committed records read in range
	ExpectedDispatches int64 `json:"expected_dispatches"` // derived from them (contract routing)
	DispatchRecords    int64 `json:"dispatch_records"`    // dispatch records read
	Matched            int64 `json:"matched"`             // expected dispatches found, first copy
	// Information, not failure: a second copy of a dispatch with identical content (a fanout
	// batch replayed after a crash or a producer retry), a message committed twice in the Outbox
	// (a writer retry between OUTBOXED and COMMITTED), and dispatches whose source lies outside
	// the audited range.
	ReplayedDuplicates int64 `json:"replayed_duplicates"`
	OutboxDuplicates   int64 `json:"outbox_duplicates"`
	OutsideRange       int64 `json:"outside_range"`

	CommittedWithoutDispatch int64 `json:"committed_without_dispatch"`
	DispatchWithoutCommit    int64 `json:"dispatch_without_commit"`
	Mismatch                 int64 `json:"mismatch"`
	WrongPartition           int64 `json:"wrong_partition"`

	MailboxRecords   int64 `json:"mailbox_records"`    // dispatch records read by the materialization pass
	EntriesChecked   int64 `json:"entries_checked"`    // entries of canonical copies looked up
	Materialized     int64 `json:"materialized"`       // found at their mailbox_seq
	Expired          int64 `json:"expired"`            // gone by retention or trim: legitimate
	MailboxDuplicate int64 `json:"mailbox_duplicates"` // dispatch records converged onto an earlier copy
	NotMaterialized  int64 `json:"not_materialized"`
	NotYet           int64 `json:"not_yet_materialized"`
}

func (c *Counts) of(k Kind) int64 {
	switch k {
	case KindCommittedWithoutDispatch:
		return c.CommittedWithoutDispatch
	case KindDispatchWithoutCommit:
		return c.DispatchWithoutCommit
	case KindMismatch:
		return c.Mismatch
	case KindWrongPartition:
		return c.WrongPartition
	case KindNotMaterialized:
		return c.NotMaterialized
	case KindNotYet:
		return c.NotYet
	}
	return 0
}

// Example names one failing record. Offsets are -1 where they do not apply.
type Example struct {
	DispatchID   string `json:"dispatch_id,omitempty"`
	MessageID    string `json:"message_id,omitempty"`
	OutboxOffset int64  `json:"outbox_offset"`
	Partition    int32  `json:"partition"`
	Offset       int64  `json:"offset"` // in the dispatch partition
	User         uint64 `json:"user,omitempty"`
	Detail       string `json:"detail"`
}

// Gap is a part of the range the audit could not read or judge: any gap makes the result
// incomplete, which fails it (fail closed).
type Gap struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	From      int64  `json:"from"` // first offset concerned, -1 if unknown
	To        int64  `json:"to"`   // end (exclusive), -1 if unknown
	Reason    string `json:"reason"`
}

// PartitionRange is the offsets [From, To) of one partition the audit read.
type PartitionRange struct {
	Partition int32 `json:"partition"`
	From      int64 `json:"from"`
	To        int64 `json:"to"`
}

// Covered is the range the audit actually covered.
type Covered struct {
	OutboxFrom int64            `json:"outbox_from"`
	OutboxTo   int64            `json:"outbox_to"` // exclusive
	Dispatch   []PartitionRange `json:"dispatch"`
}

// Result is one audit's outcome.
type Result struct {
	Covered    Covered              `json:"covered"`
	Counts     Counts               `json:"counts"`
	Examples   map[Kind][]Example   `json:"examples"`
	Incomplete []Gap                `json:"incomplete"`
	Notes      []string             `json:"notes,omitempty"`
	Mailbox    bool                 `json:"mailbox_checked"` // the materialization pass ran
	Duration   time.Duration        `json:"-"`
	Seconds    float64              `json:"duration_s"`
	RecordsPS  float64              `json:"records_per_s"` // Kafka records read per second, both passes
	Passes     map[string]PassStats `json:"passes"`
	maxEx      int
}

// PassStats is one pass's throughput.
type PassStats struct {
	Records   int64   `json:"records"`
	Seconds   float64 `json:"seconds"`
	RecordsPS float64 `json:"records_per_s"`
}

func newResult(maxExamples int) *Result {
	return &Result{Examples: map[Kind][]Example{}, Incomplete: []Gap{}, Passes: map[string]PassStats{}, maxEx: maxExamples}
}

// Complete reports whether every offset of the range was read and judged.
func (r *Result) Complete() bool { return len(r.Incomplete) == 0 }

// Failures returns every failure kind with its count (zero counts included).
func (r *Result) Failures() map[Kind]int64 {
	out := make(map[Kind]int64, len(failureKinds))
	for _, k := range failureKinds {
		out[k] = r.Counts.of(k)
	}
	return out
}

// Passed is the verdict: the range is complete and every failure count is zero.
func (r *Result) Passed() bool { return r.Err() == nil }

// Err is nil for a pass, else a *FailedError carrying what failed.
func (r *Result) Err() error {
	f := &FailedError{Failures: map[Kind]int64{}, Incomplete: len(r.Incomplete)}
	for k, n := range r.Failures() {
		if n != 0 {
			f.Failures[k] = n
		}
	}
	if len(f.Failures) == 0 && f.Incomplete == 0 {
		return nil
	}
	return f
}

// FailedError is an audit that did not pass: the non-zero failure counts and the number of gaps.
type FailedError struct {
	Failures   map[Kind]int64
	Incomplete int
}

func (e *FailedError) Error() string {
	s := "audit: failed:"
	for _, k := range failureKinds {
		if n := e.Failures[k]; n != 0 {
			s += fmt.Sprintf(" %s=%d", k, n)
		}
	}
	if e.Incomplete > 0 {
		s += fmt.Sprintf(" incomplete (%d gaps)", e.Incomplete)
	}
	return s
}

// ErrConfig is wrapped by every configuration error; nothing was read.
var ErrConfig = errors.New("audit: invalid config")

// example records e under k unless k already has the configured number of examples.
func (r *Result) example(k Kind, e Example) {
	if len(r.Examples[k]) < r.maxEx {
		r.Examples[k] = append(r.Examples[k], e)
	}
}

// gap records an unreadable part of the range. Gaps are few by nature (one per undecodable
// record, hole or unreadable partition), so they are all kept.
func (r *Result) gap(g Gap) { r.Incomplete = append(r.Incomplete, g) }

// finish fills the derived fields.
func (r *Result) finish(d time.Duration, records int64) {
	r.Duration, r.Seconds = d, d.Seconds()
	if d > 0 {
		r.RecordsPS = float64(records) / d.Seconds()
	}
}
