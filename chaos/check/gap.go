package check

import (
	"github.com/qim-dev/qim/chaos/history"
	"github.com/qim-dev/qim/contract"
)

// checkGaps applies rule 6 from the durable side: every message of this run found in a
// conversation's durable history was committed, so each member must have received it — a
// permanent hole otherwise. The recipient is the one the send's Invoke addressed, or each
// member of the group it was addressed to; a group send of unknown outcome delivered to one
// member is committed too, durable-history read or not (checkGroupPartial). The sender's
// own copy is required on the frame lane only, and only for a sender the history records own
// copies for at all (the frame lane pulls them; the SDK lane does not record them).
//
// Which holes are GAP's: the recipient's hole of an acked send is already LOST (delivery.go),
// and a failed send must stay invisible (FAILED_VISIBLE), so GAP reports the recipient's hole
// of an info send that committed — the loss nobody else can see — and any missing own copy.
// One finding per (member, message id), however many times the history was read.
func checkGaps(l *ledger, rep *report) {
	done := make(map[recvMid]struct{})
	for i := range l.ev {
		e := &l.ev[i]
		if e.Kind != history.Stored || e.Foreign || e.MessageID.IsZero() {
			continue
		}
		s := l.sends[e.Key()]
		if !s.sent {
			continue // PHANTOM
		}
		switch s.outcome() {
		case outFail, outBoth:
			continue
		case outInfo:
			for r := range l.recipients(s) {
				l.requireDelivery(rep, done, e, r, "committed (in durable history), never delivered to the recipient")
			}
		}
		if _, own := l.ownCopies[e.Sender]; own && e.Lane == history.Frame {
			l.requireDelivery(rep, done, e, e.Sender, "in durable history, the sender's own copy never delivered")
		}
	}
	checkGroupPartial(l, rep, done)
}

// requireDelivery reports a GAP when member never got the stored record's message id.
func (l *ledger) requireDelivery(rep *report, done map[recvMid]struct{}, e *history.Event, member contract.UserID, why string) {
	if member == 0 {
		return
	}
	rm := recvMid{member, e.MessageID}
	if _, got := l.got[rm]; got {
		return
	}
	if _, seen := done[rm]; seen {
		return
	}
	done[rm] = struct{}{}
	rep.add(Finding{Verdict: Gap, Key: e.Key(), Recipient: member, MessageID: e.MessageID,
		Conversation: e.Conversation, ConvSeq: e.ConvSeq, AtUs: e.AtUs, Detail: why})
}

// checkPhantoms reports every send the history shows delivered or stored that no client ever
// invoked, once per send: a message of this run nobody sent (a forged or corrupted body, or
// ordinals reused across runs).
func checkPhantoms(l *ledger, rep *report) {
	for _, k := range l.keys {
		s := l.sends[k]
		if s.sent {
			continue
		}
		why := "delivered, never invoked"
		if s.stored {
			why = "in durable history, never invoked"
		}
		f := s.finding(Phantom, 0, why)
		if len(s.recips) > 0 {
			f.Recipient = s.recips[0]
			f.AtUs = l.boxes[boxKey{s.recips[0], k}].firstUs
		}
		rep.add(f)
	}
}
