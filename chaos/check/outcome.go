package check

import "github.com/qim-dev/qim/chaos/history"

// outcome is a send's final outcome in Jepsen's terms.
type outcome uint8

const (
	outInfo outcome = iota // only invoked, or answered info (timeout, lost connection): unknown
	outOK                  // SEND_ACK
	outFail                // a definite error: must never be visible
	outBoth                // SEND_ACK and a definite error for one send: a contradiction
)

// outcome resolves a send. A definite answer replaces an earlier (or later) info, because it
// is the truth about the commit; two definite answers that disagree cannot both be true.
func (s *send) outcome() outcome {
	switch {
	case s.ok && s.fail:
		return outBoth
	case s.ok:
		return outOK
	case s.fail:
		return outFail
	}
	return outInfo
}

// checkOutcomes counts sends by outcome (rule 1) and reports contradictions: a send answered
// both ok and fail is FAILED_VISIBLE when the message became visible (the fail was a lie),
// otherwise REUSED (the ack was: the send's identity named a commit that does not exist).
func checkOutcomes(l *ledger, rep *report) {
	res := rep.res
	for _, k := range l.keys {
		s := l.sends[k]
		if !s.sent {
			continue // delivered or stored, never invoked: PHANTOM (gap.go)
		}
		res.Invoked++
		switch s.outcome() {
		case outOK:
			res.Acked++
		case outBoth:
			res.Acked++
			reportContradiction(s, rep)
		case outFail:
			res.Failed++
		case outInfo:
			res.Unknown++
			if s.key.Lane == history.SDK && s.invoked && !s.info {
				rep.add(s.finding(Unresolved, s.invokeUs, "the SDK reported neither Committed nor Failed by the end of observation"))
			}
		}
	}
}

func reportContradiction(s *send, rep *report) {
	if s.delivered || s.stored {
		rep.add(s.finding(FailedVisible, s.okUs, "ok and fail for one send, and the message is visible"))
		return
	}
	rep.add(s.finding(Reused, s.okUs, "ok and fail for one send"))
}
