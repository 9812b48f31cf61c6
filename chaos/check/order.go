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

// checkMailboxOrder judges each recipient's mailbox order within one conversation: its first
// delivery of each message id, sorted by mailbox_seq, should carry increasing seqs. A reversal
// is ORDER when real-time order demanded the mailbox's other order — the later-placed message
// was acknowledged before the earlier-placed one was even sent, so it was in the Outbox first
// and every replay keeps its first mailbox_seq. Otherwise it is LATE_COMMIT (info): a commit
// finished by a retry or the recovery loop after later sends committed, which the protocol
// allows (clients place messages by conversation_seq). Two messages of one conversation at one
// mailbox_seq are ORDER (a mailbox_seq holds at most one entry per event type, invariant 9).
// Deliveries without a mailbox_seq (the SDK lane does not see it) are not judged here.
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
		judgeMailboxRun(l, rep, idx)
	}
}

// judgeMailboxRun walks one (recipient, conversation) in mailbox order. Against every earlier
// entry with a higher seq it checks real-time order; the running maximum keeps it linear in the
// common case (no reversal), and a reversal compares only with the entries above its seq.
func judgeMailboxRun(l *ledger, rep *report, idx []int32) {
	for n := 1; n < len(idx); n++ {
		prev, cur := &l.ev[idx[n-1]], &l.ev[idx[n]]
		if cur.MailboxSeq == prev.MailboxSeq {
			rep.add(mailboxFinding(Order, cur, fmt.Sprintf("two messages of one conversation at mailbox_seq %d (seqs %d, %d)",
				cur.MailboxSeq, prev.ConvSeq, cur.ConvSeq)))
			continue
		}
		if cur.ConvSeq > prev.ConvSeq {
			continue
		}
		verdict, why := LateCommit, ""
		for m := n - 1; m >= 0; m-- {
			earlier := &l.ev[idx[m]]
			if earlier.ConvSeq <= cur.ConvSeq {
				continue
			}
			if ackedBeforeSent(l, cur, earlier) {
				verdict, why = Order, fmt.Sprintf("acknowledged before seq %d (mailbox_seq %d) was sent, yet placed after it",
					earlier.ConvSeq, earlier.MailboxSeq)
				break
			}
		}
		if why == "" {
			why = fmt.Sprintf("mailbox_seq %d carries seq %d after mailbox_seq %d carried seq %d (committed late; no real-time order broken)",
				cur.MailboxSeq, cur.ConvSeq, prev.MailboxSeq, prev.ConvSeq)
		}
		rep.add(mailboxFinding(verdict, cur, why))
	}
}

// ackedBeforeSent reports whether a's SEND_ACK was read before b's SEND was written.
func ackedBeforeSent(l *ledger, a, b *history.Event) bool {
	sa, sb := l.sends[a.Key()], l.sends[b.Key()]
	return sa != nil && sb != nil && sa.ok && sb.invoked && sa.okUs < sb.invokeUs
}

func mailboxFinding(v Verdict, e *history.Event, why string) Finding {
	return Finding{Verdict: v, Key: e.Key(), Recipient: e.Recipient, MessageID: e.MessageID,
		Conversation: e.Conversation, ConvSeq: e.ConvSeq, AtUs: e.AtUs, Detail: why}
}
