package session

// Session visibility: what of a conversation one user's row may be built from.
//
// A direct conversation is visible whole to both participants. A GROUP conversation is visible
// only inside the user's membership intervals (invariant 11, contract.Membership): the row's
// unread, head and latest_conversation_seq are defined over the records m with
// Membership.Contains(m.seq), and nothing above the last interval's left (a former member keeps
// the row as of its leave point — no trace of later traffic, not even a larger latest seq).
//
// The bounds, in terms of the unread definition (unread.go):
//
//	top   = latest counter, or min(latest, left of the last interval) for a former member
//	floor = max(read, joined of the first interval still open after read)
//
// Every visible seq in (read, top] lies in (floor, top], so the exact window is judged on
// top and floor (a member who joined a long-running group at seq 10,000 gets an exact count of
// what it can see, not "200+" of history it cannot), and the history read stops at top, so a
// leaver's row never even loads later records. Seqs between two intervals (left and added
// again) stay inside the span and are dropped by Contains; the window then saturates earlier
// than the visible count alone would, which is conservative and never a wrong exact count.
//
// The intervals are read after the seq counters, in their own round trip: a membership change
// writes its interval and takes its seq in one script, so an interval read after a counter
// reflects every change at or below that counter (a leave at J ≤ latest is never missed, which
// would show the leaver traffic after J).
//
// Rejected: filtering group rows by the mailbox entries the user received (the mailbox is per
// device and trimmed; the intervals are the one record of who may see what), and clipping only
// the head (an unread count over records the user cannot open is a badge that never clears).

import (
	"context"
	"fmt"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/msgstore"
)

// isGroup reports whether w's conversation is read through membership intervals.
func (w window) isGroup() bool { return w.conv.Kind() == contract.KindGroup }

// hidden reports a group row of a user who was never a member: nothing of it may be shown.
// Rows come from the user's own mailbox traffic, so this is an invariant breach, counted.
func (w window) hidden() bool { return w.isGroup() && !w.member.Ever() }

// visible reports whether the record at seq may count towards or head w's row.
func (w window) visible(seq uint64) bool {
	return seq <= w.top() && (!w.isGroup() || w.member.Contains(seq))
}

// top is the highest seq the row may reflect: the counter, clipped to a former member's leave
// point (0 for a user who was never a member).
func (w window) top() uint64 {
	if w.isGroup() {
		if _, hi, bounded := w.member.Bounds(); bounded {
			return min(w.latest, hi)
		}
	}
	return w.latest
}

// floor is the exclusive lower bound of the visible seqs after the read watermark.
func (w window) floor() uint64 {
	if !w.isGroup() {
		return w.read
	}
	for _, iv := range w.member {
		if iv.Left == 0 || iv.Left > w.read {
			return max(w.read, iv.Joined)
		}
	}
	return w.read // every interval closed at or below read: nothing visible is unread
}

// query is the history read the row needs: every record in (floor, top] when the count can be
// exact, and the headScan newest at or below top as head candidates.
func (w window) query() msgstore.TailQuery {
	top, floor := w.top(), w.floor()
	after := top // not exact: head candidates only
	if exactWindow(top, floor) {
		after = min(floor, top)
	}
	return msgstore.TailQuery{Conversation: w.conv, Latest: top, After: after, Min: headScan}
}

// memberships reads user k's intervals in every group conversation of convs (nil for the others
// and for a group the user was never a member of), in one pipelined read. Call it after the seq
// counters were read (see the file comment). A corrupt interval fails the whole call.
func (r redisSource) memberships(ctx context.Context, k userKey, convs []contract.ConversationID) ([]contract.Membership, error) {
	out := make([]contract.Membership, len(convs))
	var groups []contract.ConversationID
	var at []int
	for i, c := range convs {
		if c.Kind() == contract.KindGroup {
			groups = append(groups, c)
			at = append(at, i)
		}
	}
	if len(groups) == 0 {
		return out, nil
	}
	ms, err := r.hist.MemberIntervals(ctx, k.tenant, k.user, groups)
	if err != nil {
		return nil, fmt.Errorf("session: group membership: %w", err)
	}
	for j, i := range at {
		out[i] = ms[j]
	}
	return out, nil
}
