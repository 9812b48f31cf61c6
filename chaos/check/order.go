package check

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/qim-dev/qim/chaos/history"
	"github.com/qim-dev/qim/contract"
)

// checkOrder applies rule 5: real-time order within each conversation (section 8, checker 3)
// and mailbox order at each recipient.
func checkOrder(l *ledger, rep *report) {
	checkRealTime(l, rep)
	checkMailboxOrder(l, rep)
}

// point is one send in the real-time sweep: a time (its ack or its invoke) and its seq.
type point struct {
	at  int64
	seq uint64
	key history.Key
}

// checkRealTime requires: if SEND_ACK(A) was read before SEND(B) was written, in one
// conversation, then seq(B) > seq(A). A's seq and B's come from their SEND_ACK, else from a
// delivery or stored record (an info send that committed has a position too).
//
// How: per conversation, acks sorted by time and invokes sorted by time; one sweep keeps the
// highest seq acked before the current invoke. O(n log n) instead of comparing every pair.
func checkRealTime(l *ledger, rep *report) {
	acks := make(map[contract.ConversationID][]point)
	invokes := make(map[contract.ConversationID][]point)
	var convs []contract.ConversationID
	for _, k := range l.keys {
		s := l.sends[k]
		p := s.position()
		if !s.sent || unsetConv(p.conv) || p.seq == 0 {
			continue
		}
		if _, seen := invokes[p.conv]; !seen {
			convs = append(convs, p.conv)
			invokes[p.conv] = nil
		}
		if s.ok {
			acks[p.conv] = append(acks[p.conv], point{s.okUs, p.seq, k})
		}
		if s.invoked {
			invokes[p.conv] = append(invokes[p.conv], point{s.invokeUs, p.seq, k})
		}
	}
	for _, c := range convs {
		sweepRealTime(l, rep, acks[c], invokes[c])
	}
}

func sweepRealTime(l *ledger, rep *report, acks, invokes []point) {
	byAt := func(a, b point) int { return cmp.Compare(a.at, b.at) }
	slices.SortStableFunc(acks, byAt)
	slices.SortStableFunc(invokes, byAt)
	var best point // the highest seq acked so far; seq 0 = none yet
	j := 0
	for _, b := range invokes {
		for ; j < len(acks) && acks[j].at < b.at; j++ {
			if acks[j].seq > best.seq {
				best = acks[j]
			}
		}
		// best.key == b.key would be B's own ack before its invoke, which one clock and an
		// invoke recorded before the write rule out; skipping it keeps a skewed log from
		// reporting a send against itself.
		if best.seq != 0 && best.key != b.key && b.seq <= best.seq {
			s := l.sends[b.key]
			rep.add(s.finding(Order, b.at, fmt.Sprintf("invoked after the ack of %s (seq %d), got seq %d",
				best.key, best.seq, b.seq)))
		}
	}
}

type recvConv struct {
	recipient contract.UserID
	conv      contract.ConversationID
}

// checkMailboxOrder requires each recipient's mailbox to hand out one conversation's messages
// in seq order: its first delivery of each message id, sorted by mailbox_seq, has strictly
// increasing seq. Two messages of one conversation at one mailbox_seq break it too (a
// mailbox_seq holds at most one entry per event type, invariant 9). Deliveries without a
// mailbox_seq (the SDK lane does not see it) are not judged here.
func checkMailboxOrder(l *ledger, rep *report) {
	groups := make(map[recvConv][]int32)
	var order []recvConv
	for _, i := range l.firsts {
		e := &l.ev[i]
		if e.MailboxSeq == 0 || e.ConvSeq == 0 || unsetConv(e.Conversation) {
			continue
		}
		rc := recvConv{e.Recipient, e.Conversation}
		if _, seen := groups[rc]; !seen {
			order = append(order, rc)
		}
		groups[rc] = append(groups[rc], i)
	}
	for _, rc := range order {
		idx := groups[rc]
		slices.SortStableFunc(idx, func(a, b int32) int { return cmp.Compare(l.ev[a].MailboxSeq, l.ev[b].MailboxSeq) })
		for n := 1; n < len(idx); n++ {
			prev, cur := &l.ev[idx[n-1]], &l.ev[idx[n]]
			if why := mailboxOrderBroken(prev, cur); why != "" {
				rep.add(Finding{Verdict: Order, Key: cur.Key(), Recipient: cur.Recipient, MessageID: cur.MessageID,
					Conversation: cur.Conversation, ConvSeq: cur.ConvSeq, AtUs: cur.AtUs, Detail: why})
			}
		}
	}
}

// mailboxOrderBroken compares two consecutive first deliveries (by mailbox_seq).
func mailboxOrderBroken(prev, cur *history.Event) string {
	switch {
	case cur.MailboxSeq == prev.MailboxSeq:
		return fmt.Sprintf("two messages of one conversation at mailbox_seq %d (seqs %d, %d)",
			cur.MailboxSeq, prev.ConvSeq, cur.ConvSeq)
	case cur.ConvSeq <= prev.ConvSeq:
		return fmt.Sprintf("mailbox_seq %d carries seq %d after mailbox_seq %d carried seq %d",
			cur.MailboxSeq, cur.ConvSeq, prev.MailboxSeq, prev.ConvSeq)
	}
	return ""
}
