package check

import (
	"fmt"
	"strings"

	"github.com/qim-dev/qim/chaos/history"
	"github.com/qim-dev/qim/contract"
)

// Verdict names one kind of finding.
type Verdict string

// Failure verdicts: any of them fails the cell.
const (
	Lost          Verdict = "LOST"           // acked, never delivered to its recipient (a group member) or not in durable history
	Duplicate     Verdict = "DUPLICATE"      // one send seen twice by one recipient after dedup
	Reused        Verdict = "REUSED"         // one identity (seq, send, message id) naming two things
	Order         Verdict = "ORDER"          // real-time or mailbox order broken
	Gap           Verdict = "GAP"            // in durable history, never delivered to a member
	Stalled       Verdict = "STALLED"        // a mailbox or a writer frozen longer than StallAfter after the heal
	FailedVisible Verdict = "FAILED_VISIBLE" // a definite failure that became visible
	Phantom       Verdict = "PHANTOM"        // delivered or stored, never invoked
	// Unresolved: an SDK send the SDK never resolved for its app (no Committed, no Failed) by
	// the end of observation. The SDK promises each pending send one of the two (sdk/sender.go);
	// a frame-lane send without an answer stays unknown, because no client logic retries it.
	Unresolved Verdict = "UNRESOLVED"
)

// Info verdicts: counted, never a failure (an info send may go either way).
const (
	UnknownDelivered Verdict = "UNKNOWN_DELIVERED"
	UnknownAbsent    Verdict = "UNKNOWN_ABSENT"
	// LateCommit: a recipient's mailbox holds a message after one with a higher seq, and no
	// real-time order forbade it — a commit finished by a retry or by the writer's recovery loop
	// after later sends committed (docs/adr/0019-chaos-matrix.md). Clients place messages by
	// conversation_seq, not by mailbox order (MailboxEvent.conversation_seq).
	LateCommit Verdict = "LATE_COMMIT"
)

// Failures lists the failure verdicts in report order.
var Failures = []Verdict{Lost, Duplicate, Reused, Order, Gap, Stalled, FailedVisible, Phantom, Unresolved}

// Failure reports whether v fails a cell.
func (v Verdict) Failure() bool {
	return v != UnknownDelivered && v != UnknownAbsent && v != LateCommit
}

// Finding is one violation (or one info outcome). Fields the rule does not know are zero.
type Finding struct {
	Verdict      Verdict
	Key          history.Key
	Recipient    contract.UserID
	MessageID    contract.MessageID
	Conversation contract.ConversationID
	ConvSeq      uint64
	// AtUs is when the finding's evidence starts: the ack of a lost send, the start of a stall.
	AtUs   int64
	Detail string
}

func (f Finding) String() string {
	return fmt.Sprintf("%s %s → %d mid %s conv %s seq %d at %d: %s", f.Verdict, f.Key, f.Recipient,
		f.MessageID, f.Conversation, f.ConvSeq, f.AtUs, f.Detail)
}

// Result is the checker's verdict over one history.
type Result struct {
	// Counts has every verdict, zero included, so a report always shows all of them.
	Counts map[Verdict]int
	// Examples keeps the first Options.Examples findings of each verdict, in history order.
	Examples map[Verdict][]Finding
	// Sends by final outcome: Invoked = Acked + Failed + Unknown. A send answered both ok and
	// fail is counted as Acked (the client did read a SEND_ACK) and reported by rule 1.
	Invoked, Acked, Failed, Unknown int
	// Delivered is the number of acked sends delivered to their recipient (a group send: to
	// every member but the sender).
	Delivered int
	// Passed: no failure verdict and at least one acked send (no evidence is not a pass).
	Passed bool
	// RecoveryAckMs is fault → the first SEND_ACK of a send invoked at or after the fault;
	// -1 without a fault or when none came.
	RecoveryAckMs float64
	// DrainMs is fault → the delivery of the last send acked before the heal that was not yet
	// delivered when the fault began (the backlog the fault built up); -1 without a fault,
	// when there was no backlog, or when part of it was never delivered.
	DrainMs float64
}

// Summary is the one-line form for logs and reports.
func (r *Result) Summary() string {
	var b strings.Builder
	if r.Passed {
		b.WriteString("PASS ")
	} else {
		b.WriteString("FAIL ")
	}
	fmt.Fprintf(&b, "ok %d, fail %d, info %d (%d delivered) —", r.Acked, r.Failed, r.Unknown, r.Counts[UnknownDelivered])
	for _, v := range Failures {
		fmt.Fprintf(&b, " %s %d", v, r.Counts[v])
	}
	if r.Acked == 0 {
		b.WriteString("; no acked send: no evidence")
	}
	if r.RecoveryAckMs >= 0 {
		fmt.Fprintf(&b, "; recovery %.0f ms", r.RecoveryAckMs)
	}
	if r.DrainMs >= 0 {
		fmt.Fprintf(&b, "; drain %.0f ms", r.DrainMs)
	}
	return b.String()
}

// report collects findings into a Result, keeping a bounded number of examples.
type report struct {
	res  *Result
	keep int
}

func newReport(keep int) *report {
	res := &Result{Counts: make(map[Verdict]int), Examples: make(map[Verdict][]Finding),
		RecoveryAckMs: -1, DrainMs: -1}
	for _, v := range Failures {
		res.Counts[v] = 0
	}
	res.Counts[UnknownDelivered], res.Counts[UnknownAbsent] = 0, 0
	return &report{res: res, keep: keep}
}

func (r *report) add(f Finding) {
	r.res.Counts[f.Verdict]++
	if ex := r.res.Examples[f.Verdict]; len(ex) < r.keep {
		r.res.Examples[f.Verdict] = append(ex, f)
	}
}

// finish decides Passed once every rule has run.
func (r *report) finish() *Result {
	res := r.res
	res.Passed = res.Acked > 0
	for _, v := range Failures {
		if res.Counts[v] > 0 {
			res.Passed = false
		}
	}
	return res
}
