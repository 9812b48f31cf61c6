package check

import "strings"

// checkDelivery applies rule 2 to every send: an acked send must reach its recipient and, when
// its conversation's durable history was read, be in it; a failed send must never be visible;
// an info send is counted as delivered or absent, never failed.
//
// "Reached its recipient" means a Deliver to the recipient the client addressed, whatever its
// message id: a delivery under another id is REUSED's finding (reuse.go), not a loss. Pushes
// are not deliveries (PUSH_EVENTS is best effort) and own copies are not the recipient's. A
// group send must reach every member but the sender (group.go); an info group send counts as
// delivered when it reached any of them.
func checkDelivery(l *ledger, rep *report) {
	for _, k := range l.keys {
		s := l.sends[k]
		if !s.sent {
			continue
		}
		got := l.reached(s)
		switch s.outcome() {
		case outOK:
			if s.toGroup() {
				checkGroupLost(l, s, rep)
				continue
			}
			if got {
				rep.res.Delivered++
			}
			if why := lostReason(l, s, got); why != "" {
				rep.add(s.finding(Lost, s.okUs, why))
			}
		case outFail:
			if why := visibleReason(s); why != "" {
				rep.add(s.finding(FailedVisible, s.invokeUs, why))
			}
		case outInfo:
			if got {
				rep.add(s.finding(UnknownDelivered, s.invokeUs, "info send delivered"))
			} else {
				rep.add(s.finding(UnknownAbsent, s.invokeUs, "info send never delivered"))
			}
		}
	}
}

// lostReason says why an acked send is lost, "" when it is not. Both reasons can hold; one
// finding names both, so a loss is counted once.
func lostReason(l *ledger, s *send, got bool) string {
	var why []string
	if !got {
		why = append(why, "acked, never delivered to the recipient")
	}
	if c := s.okPos.conv; !unsetConv(c) && !s.okPos.mid.IsZero() {
		if _, read := l.storedConv[c]; read {
			if _, in := l.storedMsg[convMid{c, s.okPos.mid}]; !in {
				why = append(why, "acked, not in durable history")
			}
		}
	}
	return strings.Join(why, "; ")
}

// visibleReason says how a failed send became visible, "" when it did not. Any delivery
// counts, the sender's own copy included: a definite failure must be visible to nobody.
func visibleReason(s *send) string {
	switch {
	case s.delivered && s.stored:
		return "fail, yet delivered and in durable history"
	case s.delivered:
		return "fail, yet delivered"
	case s.stored:
		return "fail, yet in durable history"
	}
	return ""
}
