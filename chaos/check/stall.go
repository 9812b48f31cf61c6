package check

import (
	"fmt"

	"github.com/qim-dev/qim/chaos/history"
	"github.com/qim-dev/qim/contract"
)

// checkStalls applies rule 7: after the heal, neither a mailbox nor a conversation's writer
// may stay frozen longer than StallAfter. A mailbox is frozen while it holds acked messages
// and gets no delivery; a conversation is frozen while its senders invoke and nothing is
// answered ok or fail. Stretches before the heal are the fault itself and not findings, so
// every stretch is measured from the heal at the earliest (from the first event without one).
//
// How: one walk in time order. A watch's state changes only at its own events, so checking it
// just before each of its own events and once at the end of observation finds exactly what
// checking every watch at every event would, in O(events) instead of O(events × watches).
//
// Rejected alternative: a fixed tick (every second) over all watches. It costs
// O(duration × watches), reports a stall up to a tick late, and needs a clock the history
// does not have between events.
func checkStalls(l *ledger, rep *report) {
	w := &stallWalk{l: l, rep: rep, heal: l.opt.HealUs, after: l.opt.StallAfter.Microseconds(),
		boxes: make(map[contract.UserID]*mailboxWatch), pairs: make(map[pairKey]*pairWatch),
		member: make(map[boxKey]uint8)}
	for i := range l.ev {
		w.step(&l.ev[i])
	}
	for _, r := range w.boxOrder {
		w.checkBox(r, w.boxes[r], l.endUs)
	}
	for _, pk := range w.pairOrder {
		// At the end only a send still unanswered proves the senders were still waiting; a
		// pair whose last sends were answered info just stopped sending.
		if p := w.pairs[pk]; p.outstanding > 0 {
			w.checkPair(p, l.endUs)
		}
	}
}

type stallWalk struct {
	l           *ledger
	rep         *report
	heal, after int64 // µs
	boxes       map[contract.UserID]*mailboxWatch
	boxOrder    []contract.UserID
	pairs       map[pairKey]*pairWatch
	pairOrder   []pairKey
	// member is the walk's state of each (member, group send): what the send's scratch fields
	// walkPending and walkDelivered say for a 1:1 send's one recipient.
	member map[boxKey]uint8
}

// Bits of stallWalk.member.
const (
	memberPending uint8 = 1 << iota
	memberDelivered
)

// mailboxWatch follows one recipient's mailbox.
type mailboxWatch struct {
	pending     int   // acked, not yet delivered (a delivery before the ack is never pending)
	since       int64 // when pending last became non-empty
	sinceKey    history.Key
	lastDeliver int64 // any delivery, own copies included: the mailbox was moving
	stalled     bool
}

// pairKey is a conversation as the two users it joins, lower id first (an info send's
// conversation id is unknown, its users are not), or a group's conversation (a, b zero: a group
// send names its conversation from the start).
type pairKey struct {
	a, b contract.UserID
	conv contract.ConversationID
}

// pairWatch follows the writer side of one conversation.
type pairWatch struct {
	waiting     bool  // a send was invoked (at or after the heal) and nothing answered ok or fail since
	from        int64 // that invoke
	fromKey     history.Key
	outstanding int // invoked, not answered at all (not even info) yet
	stalled     bool
}

func (w *stallWalk) step(e *history.Event) {
	switch e.Kind {
	case history.Invoke, history.Ok, history.Fail, history.Info:
		s := w.l.sends[e.Key()]
		w.stepPair(e, s)
		if e.Kind == history.Ok {
			w.stepAck(e, s)
		}
	case history.Deliver:
		w.stepDelivery(e)
	}
}

func (w *stallWalk) stepPair(e *history.Event, s *send) {
	var p *pairWatch
	switch {
	case s.toGroup():
		p = w.watch(pairKey{conv: s.group})
	case s.recipient == 0:
		return
	default:
		p = w.pair(s.key.Sender, s.recipient)
	}
	w.checkPair(p, e.AtUs)
	switch e.Kind {
	case history.Invoke:
		if !s.walkInvoked {
			s.walkInvoked = true
			if !s.walkAnswered {
				p.outstanding++
			}
		}
		if !p.waiting && e.AtUs >= w.heal {
			p.waiting, p.from, p.fromKey = true, e.AtUs, s.key
		}
		return
	case history.Ok, history.Fail:
		p.waiting = false
	}
	if !s.walkAnswered {
		s.walkAnswered = true
		if s.walkInvoked {
			p.outstanding--
		}
	}
}

// stepAck makes an acked send pending at its recipient unless the delivery came first (the
// push and pull beat the ack, which is legal).
func (w *stallWalk) stepAck(e *history.Event, s *send) {
	if s.toGroup() && !s.walkAcked {
		s.walkAcked = true
		w.stepGroupAck(s, e.AtUs)
		return
	}
	if s.recipient == 0 || s.walkAcked {
		return
	}
	s.walkAcked = true
	m := w.box(s.recipient)
	w.checkBox(s.recipient, m, e.AtUs)
	if s.walkDelivered {
		return
	}
	s.walkPending = true
	if m.pending++; m.pending == 1 {
		m.since, m.sinceKey = e.AtUs, s.key
	}
}

func (w *stallWalk) stepDelivery(e *history.Event) {
	m := w.box(e.Recipient)
	w.checkBox(e.Recipient, m, e.AtUs)
	m.lastDeliver = e.AtUs
	s := w.l.sends[e.Key()]
	if s.toGroup() {
		w.stepGroupDelivery(e, s, m)
		return
	}
	if e.Recipient != s.recipient {
		return // an own copy: moves the mailbox, settles nothing pending
	}
	s.walkDelivered = true
	if s.walkPending {
		s.walkPending = false
		m.pending--
	}
}

// stepGroupAck makes an acked group send pending at every member that has not got it yet.
func (w *stallWalk) stepGroupAck(s *send, atUs int64) {
	for r := range w.l.recipients(s) {
		m := w.box(r)
		w.checkBox(r, m, atUs)
		bk := boxKey{r, s.key}
		if w.member[bk]&memberDelivered != 0 {
			continue
		}
		w.member[bk] |= memberPending
		if m.pending++; m.pending == 1 {
			m.since, m.sinceKey = atUs, s.key
		}
	}
}

// stepGroupDelivery settles a group send pending at the member that got it; the sender's own
// copy (or a delivery to a non-member) only moves the mailbox.
func (w *stallWalk) stepGroupDelivery(e *history.Event, s *send, m *mailboxWatch) {
	if !w.l.isRecipient(s, e.Recipient) {
		return
	}
	bk := boxKey{e.Recipient, s.key}
	st := w.member[bk]
	if st&memberDelivered != 0 {
		return
	}
	w.member[bk] = st | memberDelivered
	if st&memberPending != 0 {
		m.pending--
	}
}

func (w *stallWalk) checkBox(r contract.UserID, m *mailboxWatch, atUs int64) {
	if m.stalled || m.pending == 0 {
		return
	}
	from := max(w.heal, m.lastDeliver, m.since)
	if atUs-from <= w.after {
		return
	}
	m.stalled = true
	w.rep.add(Finding{Verdict: Stalled, Key: m.sinceKey, Recipient: r, AtUs: from,
		Detail: fmt.Sprintf("mailbox: %d acked messages waited, no delivery for %.1f s", m.pending, seconds(atUs-from))})
}

func (w *stallWalk) checkPair(p *pairWatch, atUs int64) {
	if p.stalled || !p.waiting || atUs-p.from <= w.after {
		return
	}
	p.stalled = true
	s := w.l.sends[p.fromKey]
	who := fmt.Sprintf("between %d and %d", s.key.Sender, s.recipient)
	if s.toGroup() {
		who = "to group " + s.group.String()
	}
	w.rep.add(s.finding(Stalled, p.from, fmt.Sprintf("writer: sends %s invoked, none answered ok or fail for %.1f s",
		who, seconds(atUs-p.from))))
}

func (w *stallWalk) box(r contract.UserID) *mailboxWatch {
	m := w.boxes[r]
	if m == nil {
		m = &mailboxWatch{}
		w.boxes[r] = m
		w.boxOrder = append(w.boxOrder, r)
	}
	return m
}

func (w *stallWalk) pair(x, y contract.UserID) *pairWatch {
	return w.watch(pairKey{a: min(x, y), b: max(x, y)})
}

func (w *stallWalk) watch(pk pairKey) *pairWatch {
	p := w.pairs[pk]
	if p == nil {
		p = &pairWatch{}
		w.pairs[pk] = p
		w.pairOrder = append(w.pairOrder, pk)
	}
	return p
}

func seconds(us int64) float64 { return float64(us) / 1e6 }
