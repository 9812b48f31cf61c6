package session

import (
	"testing"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/msgstore"
)

var groupConv = contract.ConversationID{Hi: uint64(contract.KindGroup) << 60, Lo: 1}

// history returns records of a group for seqs latest..1 (newest first, as msgstore.Tails
// answers): every seq is a TEXT from them, except the CONTROL seqs given.
func history(latest uint64, control ...uint64) []*internalv1.MessageRecord {
	out := make([]*internalv1.MessageRecord, 0, latest)
	for s := latest; s > 0; s-- {
		typ := contract.MessageText
		for _, c := range control {
			if c == s {
				typ = contract.MessageControl
			}
		}
		out = append(out, rec(s, them, typ, 0))
	}
	return out
}

func iv(joined, left uint64) contract.MemberInterval {
	return contract.MemberInterval{Joined: joined, Left: left}
}

// A group row is the unread definition restricted to the user's intervals: nothing before the
// first join, nothing in a gap between intervals, nothing after a leave — not in unread, not as
// head, not as latest seq, not as read watermark; the exact window is judged on what is visible.
func TestGroupRowClippedToIntervals(t *testing.T) {
	C := contract.MessageControl
	tests := []struct {
		name     string
		latest   uint64 // the conversation's counter
		read     uint64
		member   contract.Membership
		recs     []*internalv1.MessageRecord
		unread   uint32
		exact    bool
		head     uint64 // 0: no head
		latestOf uint64 // the row's latest_conversation_seq
		readOf   uint64 // the row's read_conversation_seq
		hidden   bool
	}{
		{name: "member from creation sees all", latest: 9, member: contract.Membership{iv(0, 0)},
			recs: history(9, 1), unread: 8, exact: true, head: 9, latestOf: 9},
		{name: "joined at 4 sees its ADD and after, nothing before", latest: 9, member: contract.Membership{iv(3, 0)},
			recs: history(9, 1, 4), unread: 5, exact: true, head: 9, latestOf: 9},
		{name: "joiner whose only visible record is its ADD has no head", latest: 4, member: contract.Membership{iv(3, 0)},
			recs: history(4, 1, 4), unread: 0, exact: true, head: 0, latestOf: 4},
		{name: "leaver at 6 keeps the row as of its leave", latest: 9, member: contract.Membership{iv(0, 6)},
			recs: history(9, 1, 6), unread: 4, exact: true, head: 5, latestOf: 6},
		{name: "leaver's read is shown no higher than its leave", latest: 9, read: 8, member: contract.Membership{iv(0, 6)},
			recs: history(9, 1, 6), unread: 0, exact: true, head: 5, latestOf: 6, readOf: 6},
		{name: "removed at 3, added again at 7: the gap is excluded", latest: 9, member: contract.Membership{iv(0, 3), iv(6, 0)},
			recs: history(9, 1, 3, 7), unread: 3, exact: true, head: 9, latestOf: 9},
		{name: "read in the gap counts from the second join", latest: 9, read: 4, member: contract.Membership{iv(0, 3), iv(6, 0)},
			recs: history(9, 1, 3, 7), unread: 2, exact: true, head: 9, latestOf: 9, readOf: 4},
		{name: "left twice: gap and tail excluded", latest: 12, member: contract.Membership{iv(0, 3), iv(6, 10)},
			recs: history(12, 1, 3, 7, 10), unread: 3, exact: true, head: 9, latestOf: 10},
		{name: "own messages and recalled stay excluded", latest: 4, member: contract.Membership{iv(1, 0)},
			recs: []*internalv1.MessageRecord{rec(4, me, contract.MessageText, 0), rec(3, them, contract.MessageText, flagRecalled),
				rec(2, them, C, 0), rec(1, them, contract.MessageText, 0)}, unread: 0, exact: true, head: 4, latestOf: 4},
		{name: "joined late in a long group: exact over what it sees", latest: 1000, member: contract.Membership{iv(900, 0)},
			recs: history(1000)[:100], unread: 100, exact: true, head: 1000, latestOf: 1000},
		{name: "left early in a long group: exact over what it saw", latest: 1000, member: contract.Membership{iv(0, 50)},
			recs: history(50), unread: 50, exact: true, head: 50, latestOf: 50},
		{name: "beyond the window of what it sees: saturated", latest: 1000, member: contract.Membership{iv(700, 0)},
			recs: history(1000)[:8], unread: contract.UnreadExactWindow, exact: false, head: 1000, latestOf: 1000},
		{name: "never a member: hidden, nothing shown", latest: 9, read: 3, member: nil,
			recs: history(9), unread: 0, exact: true, head: 0, latestOf: 0, hidden: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := window{self: me, conv: groupConv, latest: tc.latest, read: tc.read, member: tc.member, recs: tc.recs}
			s := summarize(w, 1024)
			if s.unread != tc.unread || s.exact != tc.exact {
				t.Errorf("unread = (%d, %v), want (%d, %v)", s.unread, s.exact, tc.unread, tc.exact)
			}
			if got := s.head.GetConversationSeq(); got != tc.head {
				t.Errorf("head seq = %d, want %d", got, tc.head)
			}
			wantRead := tc.read
			if tc.readOf != 0 || tc.hidden {
				wantRead = tc.readOf
			}
			if s.latestSeq != tc.latestOf || s.read != wantRead || s.hidden != tc.hidden || s.peer != 0 {
				t.Errorf("latest %d read %d hidden %v peer %d, want %d %d %v 0", s.latestSeq, s.read, s.hidden, s.peer,
					tc.latestOf, wantRead, tc.hidden)
			}
		})
	}
}

// The history read of a row stops at a leaver's leave point and starts, when the count can be
// exact, at the first visible seq after the watermark; a never-member reads nothing. A direct
// conversation is read exactly as before groups existed.
func TestWindowQueryBounds(t *testing.T) {
	tests := []struct {
		name         string
		conv         contract.ConversationID
		latest, read uint64
		member       contract.Membership
		want         msgstore.TailQuery // Conversation filled in below
	}{
		{"direct, exact", directConv, 50, 10, nil, msgstore.TailQuery{Latest: 50, After: 10}},
		{"direct, saturated: head candidates only", directConv, 500, 10, nil, msgstore.TailQuery{Latest: 500, After: 500}},
		{"direct, read ahead of the counter", directConv, 5, 9, nil, msgstore.TailQuery{Latest: 5, After: 5}},
		{"member", groupConv, 50, 10, contract.Membership{iv(0, 0)}, msgstore.TailQuery{Latest: 50, After: 10}},
		{"joined after the watermark", groupConv, 5000, 10, contract.Membership{iv(4900, 0)}, msgstore.TailQuery{Latest: 5000, After: 4900}},
		{"leaver: never above the leave", groupConv, 5000, 0, contract.Membership{iv(0, 120)}, msgstore.TailQuery{Latest: 120, After: 0}},
		{"re-added, read in the gap", groupConv, 90, 30, contract.Membership{iv(0, 20), iv(60, 0)}, msgstore.TailQuery{Latest: 90, After: 60}},
		{"re-added, read in the first interval", groupConv, 90, 15, contract.Membership{iv(0, 20), iv(60, 0)}, msgstore.TailQuery{Latest: 90, After: 15}},
		{"never a member: nothing", groupConv, 90, 0, nil, msgstore.TailQuery{Latest: 0, After: 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.want.Conversation, tc.want.Min = tc.conv, headScan
			got := window{self: me, conv: tc.conv, latest: tc.latest, read: tc.read, member: tc.member}.query()
			if got != tc.want {
				t.Fatalf("query = %+v, want %+v", got, tc.want)
			}
		})
	}
}
