package check

import (
	"fmt"
	"iter"

	"github.com/qim-dev/qim/chaos/history"
	"github.com/qim-dev/qim/contract"
)

// Group sends. A send addressed to a group names the group's conversation and no recipient
// (chaos/history); the group's members are recorded once, as Group events, when the harness
// created it, and membership is static for a run. So a group send's recipients are the members
// recorded for its conversation except the sender, and every rule that asks "did the recipient
// get it" asks it per (send, member): LOST and GAP name the member, DUPLICATE already keeps one
// box per (recipient, send). The sender's own copy is judged as for a 1:1 send (GAP, frame lane).
//
// Rejected alternative: deriving the recipients from the deliveries (whoever got the message is
// a member). A member that got nothing is then no recipient at all, which is the one loss the
// checker exists to find.

// addGroupMember records one Group event: e.Recipient is a member of e.Conversation's group.
func (l *ledger) addGroupMember(e *history.Event) {
	if unsetConv(e.Conversation) || e.Recipient == 0 {
		return
	}
	set := l.memberSet[e.Conversation]
	if set == nil {
		set = make(map[contract.UserID]struct{})
		l.memberSet[e.Conversation] = set
	}
	if _, seen := set[e.Recipient]; seen {
		return
	}
	set[e.Recipient] = struct{}{}
	l.members[e.Conversation] = append(l.members[e.Conversation], e.Recipient)
}

// toGroup reports whether s was addressed to a group (a send that also names a user is not).
func (s *send) toGroup() bool { return s.recipient == 0 && !unsetConv(s.group) }

// recipients yields whom s must reach: its peer (when known), or every recorded member of its
// group but the sender, in the order the history recorded them.
func (l *ledger) recipients(s *send) iter.Seq[contract.UserID] {
	return func(yield func(contract.UserID) bool) {
		if !s.toGroup() {
			if s.recipient != 0 {
				yield(s.recipient)
			}
			return
		}
		for _, m := range l.members[s.group] {
			if m != s.key.Sender && !yield(m) {
				return
			}
		}
	}
}

// isRecipient reports whether u is one of s's recipients.
func (l *ledger) isRecipient(s *send, u contract.UserID) bool {
	if !s.toGroup() {
		return u != 0 && u == s.recipient
	}
	_, member := l.memberSet[s.group][u]
	return member && u != s.key.Sender
}

// reached reports whether any recipient got s.
func (l *ledger) reached(s *send) bool {
	for r := range l.recipients(s) {
		if l.boxes[boxKey{r, s.key}] != nil {
			return true
		}
	}
	return false
}

// checkGroupLost is rule 2 for an acked group send: one LOST per member that never got it, the
// durable-history reason on the first; a send every member got counts as delivered (and is
// LOST once when the durable history lacks it). A group whose members the history does not
// record leaves the send without any evidence of delivery: LOST.
func checkGroupLost(l *ledger, s *send, rep *report) {
	members := l.members[s.group]
	if len(members) == 0 {
		rep.add(s.finding(Lost, s.okUs, fmt.Sprintf("acked to group %s, whose members the history does not record", s.group)))
		return
	}
	stored := lostReason(l, s, true)
	lost := 0
	for r := range l.recipients(s) {
		if l.boxes[boxKey{r, s.key}] != nil {
			continue
		}
		why := fmt.Sprintf("acked, never delivered to member %d (group of %d)", r, len(members))
		if lost == 0 && stored != "" {
			why += "; " + stored
		}
		f := s.finding(Lost, s.okUs, why)
		f.Recipient = r
		rep.add(f)
		lost++
	}
	if lost == 0 {
		rep.res.Delivered++
		if stored != "" {
			rep.add(s.finding(Lost, s.okUs, stored))
		}
	}
}

// checkGroupPartial is GAP for a group send of unknown outcome that reached some members: the
// delivery proves it committed, so every other member must get it too (rule 6 without a
// durable-history read). One finding per (member, message id), shared with checkGaps.
func checkGroupPartial(l *ledger, rep *report, done map[recvMid]struct{}) {
	for _, k := range l.keys {
		s := l.sends[k]
		if !s.sent || !s.toGroup() || s.outcome() != outInfo || !l.reached(s) {
			continue
		}
		p := s.position()
		e := history.Event{Lane: k.Lane, Sender: k.Sender, Ordinal: k.Ordinal, MessageID: p.mid, Conversation: p.conv,
			ConvSeq: p.seq, AtUs: s.invokeUs}
		for r := range l.recipients(s) {
			if l.boxes[boxKey{r, k}] == nil {
				l.requireDelivery(rep, done, &e, r, "committed (delivered to another member), never delivered to this member")
			}
		}
	}
}
