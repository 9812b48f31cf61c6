package check

import (
	"fmt"
	"slices"

	"github.com/qim-dev/qim/chaos/history"
	"github.com/qim-dev/qim/contract"
)

// checkReuse applies rule 4 (section 8, checker 2: one send maps to one message forever, and
// no conversation seq is assigned twice). An identity that names two different things is
// REUSED: (a) a (conversation, seq) carrying two message ids, (b) one send carrying two
// message ids, (c) one message id at two positions. Zero fields are unset, never compared.
func checkReuse(l *ledger, rep *report) {
	checkPositions(l, rep)
	for _, k := range l.keys {
		s := l.sends[k]
		if len(s.mids) < 2 {
			continue
		}
		if extra, ok := unexplainedMid(l, s); ok {
			f := s.finding(Reused, s.atUs(), fmt.Sprintf("one send under %d message ids: %s", len(s.mids), midList(s.mids)))
			f.MessageID = extra
			rep.add(f)
		}
	}
}

// unexplainedMid returns a message id of s that a double commit does not explain. A double
// commit shows each of its ids delivered to a recipient that got both; DUPLICATE reports it
// and REUSED does not repeat it. Any other id (SEND_ACK named X, the recipient got only Y; the
// stored record says Z) means the send's identity was attached to a message it did not make.
func unexplainedMid(l *ledger, s *send) (contract.MessageID, bool) {
	var dup []contract.MessageID
	for _, r := range s.recips {
		if b := l.boxes[boxKey{r, s.key}]; len(b.mids) > 1 {
			dup = append(dup, b.mids...)
		}
	}
	for _, m := range s.mids {
		if !slices.Contains(dup, m) {
			return m, true
		}
	}
	return contract.MessageID{}, false
}

type slot struct {
	conv contract.ConversationID
	seq  uint64
}

// checkPositions reports (a) and (c) in one pass over every event that names a position,
// once per slot and once per message id. Foreign stored records take part: a position
// conflict needs no message body to be one.
func checkPositions(l *ledger, rep *report) {
	bySlot := make(map[slot]contract.MessageID, len(l.keys))
	byMid := make(map[contract.MessageID]slot, len(l.keys))
	doneSlot := make(map[slot]bool)
	doneMid := make(map[contract.MessageID]bool)
	for i := range l.ev {
		e := &l.ev[i]
		if !namesPosition(e) {
			continue
		}
		sl := slot{e.Conversation, e.ConvSeq}
		if m, seen := bySlot[sl]; !seen {
			bySlot[sl] = e.MessageID
		} else if m != e.MessageID && !doneSlot[sl] {
			doneSlot[sl] = true
			rep.add(positionFinding(e, fmt.Sprintf("seq %d carries message ids %s and %s", e.ConvSeq,
				m, e.MessageID)))
		}
		if p, seen := byMid[e.MessageID]; !seen {
			byMid[e.MessageID] = sl
		} else if p != sl && !doneMid[e.MessageID] {
			doneMid[e.MessageID] = true
			rep.add(positionFinding(e, fmt.Sprintf("message id at seq %d and at seq %d (conversations %s, %s)",
				p.seq, e.ConvSeq, p.conv, e.Conversation)))
		}
	}
}

func namesPosition(e *history.Event) bool {
	switch e.Kind {
	case history.Ok, history.Deliver, history.Stored:
		return !e.MessageID.IsZero() && !unsetConv(e.Conversation) && e.ConvSeq != 0
	}
	return false
}

func positionFinding(e *history.Event, detail string) Finding {
	f := Finding{Verdict: Reused, Recipient: e.Recipient, MessageID: e.MessageID, Conversation: e.Conversation,
		ConvSeq: e.ConvSeq, AtUs: e.AtUs, Detail: detail}
	if !e.Foreign {
		f.Key = e.Key()
	}
	return f
}
