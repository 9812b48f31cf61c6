package check

import (
	"fmt"

	"github.com/qim-dev/qim/chaos/history"
	"github.com/qim-dev/qim/contract"
)

// checkDuplicates applies rule 3: a recipient that got one send under two message ids saw a
// double commit that dedup by message id cannot hide; an application (the SDK lane, after the
// SDK's own dedup) that got one message id twice saw a dedup failure. A raw pull (frame lane)
// may legally return one message id again: delivery is at-least-once below the application.
func checkDuplicates(l *ledger, rep *report) {
	for _, bk := range l.boxOrder {
		b := l.boxes[bk]
		if len(b.mids) < 2 {
			continue
		}
		s := l.sends[bk.key]
		f := s.finding(Duplicate, b.dupUs, fmt.Sprintf("%d message ids delivered for one send: %s",
			len(b.mids), midList(b.mids)))
		f.Recipient, f.MessageID = bk.recipient, b.mids[1]
		rep.add(f)
	}
	checkAppDuplicates(l, rep)
}

// checkAppDuplicates reports each (recipient, message id) an application saw twice, once.
func checkAppDuplicates(l *ledger, rep *report) {
	reported := make(map[recvMid]bool) // present: seen once; true: already reported
	for i := range l.ev {
		e := &l.ev[i]
		if e.Kind != history.Deliver || !e.App || e.MessageID.IsZero() {
			continue
		}
		rm := recvMid{e.Recipient, e.MessageID}
		done, seen := reported[rm]
		if !seen {
			reported[rm] = false
			continue
		}
		if done {
			continue
		}
		reported[rm] = true
		rep.add(Finding{Verdict: Duplicate, Key: e.Key(), Recipient: e.Recipient, MessageID: e.MessageID,
			Conversation: e.Conversation, ConvSeq: e.ConvSeq, AtUs: e.AtUs,
			Detail: "one message id delivered twice to the application"})
	}
}

// midList prints up to three ids, enough to grep the log for the rest.
func midList(mids []contract.MessageID) string {
	out := ""
	for i, m := range mids {
		if i == 3 {
			return out + ", …"
		}
		if i > 0 {
			out += ", "
		}
		out += m.String()
	}
	return out
}
