package check

import (
	"cmp"
	"slices"

	"github.com/qim-dev/qim/chaos/history"
	"github.com/qim-dev/qim/contract"
)

// ledger is the history indexed once, shared read-only by every rule (the stall walk also
// uses the scratch fields of send).
//
// Invariants: ev is sorted by AtUs, stably, so equal times keep the order one goroutine
// recorded them in; keys, boxOrder and firsts list things in the order the history first shows
// them, so findings and examples come out the same on every run (Go's map order is random);
// every lookup a rule makes is a map keyed by a send or a message id, so each rule is one pass
// over the events or the sends, never a comparison of every pair.
//
// Rejected alternative: letting every rule rescan the raw events with its own maps. Each rule
// would rebuild the same per-send view (outcome, recipient, message ids) at 200k events per
// rule, and the rules would drift in how they resolve the same send.
type ledger struct {
	ev    []history.Event
	opt   Options
	endUs int64 // end of observation: max(opt.EndUs, last event)

	sends map[history.Key]*send
	keys  []history.Key // first-seen order

	boxes    map[boxKey]*box // what one recipient got of one send
	boxOrder []boxKey

	got    map[recvMid]struct{} // (recipient, message id) delivered at least once
	firsts []int32              // indices in ev of the first Deliver of each (recipient, message id)

	storedConv map[contract.ConversationID]struct{} // conversations whose durable history was read
	storedMsg  map[convMid]struct{}
	ownCopies  map[contract.UserID]struct{} // frame-lane senders whose own copies the history records

	members   map[contract.ConversationID][]contract.UserID // each group's members, as Group events name them (group.go)
	memberSet map[contract.ConversationID]map[contract.UserID]struct{}
}

// send is everything the history says about one send (or about a Key nobody invoked).
type send struct {
	key       history.Key
	recipient contract.UserID         // from the Invoke, else from the first answer; 0 for a group send
	group     contract.ConversationID // the group conversation a group send was addressed to (group.go)

	sent     bool // any Invoke, Ok, Fail or Info: the client did send it
	invoked  bool
	invokeUs int64
	ok, fail bool
	info     bool // answered unknown (a lost connection, a timeout, the SDK giving up)
	okUs     int64
	okPos    pos // the position SEND_ACK named
	anyPos   pos // the first position seen on any Ok, Deliver or Stored

	mids      []contract.MessageID // distinct message ids across Ok, Deliver and Stored
	recips    []contract.UserID    // distinct recipients of its deliveries (own copy included)
	delivered bool                 // delivered to anyone
	stored    bool                 // in a non-foreign durable-history record

	// Scratch of the stall walk (stall.go), which visits events in time order: what had
	// happened to the send so far.
	walkInvoked, walkAnswered, walkAcked, walkDelivered, walkPending bool
}

// pos is where a message sits: its id and (conversation, seq). Zero fields were not set.
type pos struct {
	mid  contract.MessageID
	conv contract.ConversationID
	seq  uint64
}

type boxKey struct {
	recipient contract.UserID
	key       history.Key
}

// box is what one recipient got of one send.
type box struct {
	firstUs int64
	mids    []contract.MessageID // distinct, in arrival order
	dupUs   int64                // when the second distinct id arrived
}

type recvMid struct {
	recipient contract.UserID
	mid       contract.MessageID
}

type convMid struct {
	conv contract.ConversationID
	mid  contract.MessageID
}

func newLedger(events []history.Event, opt Options) *ledger {
	ev := sortedByTime(events)
	// Sized from the kinds up front: growing a 100k-entry map rehashes it a dozen times.
	var n [history.Stored + 1]int
	for i := range ev {
		if k := ev[i].Kind; k <= history.Stored {
			n[k]++
		}
	}
	l := &ledger{ev: ev, opt: opt, endUs: opt.EndUs,
		sends: make(map[history.Key]*send, n[history.Invoke]), boxes: make(map[boxKey]*box, n[history.Deliver]),
		got: make(map[recvMid]struct{}, n[history.Deliver]), storedConv: make(map[contract.ConversationID]struct{}),
		storedMsg: make(map[convMid]struct{}, n[history.Stored]), ownCopies: make(map[contract.UserID]struct{}),
		members: make(map[contract.ConversationID][]contract.UserID), memberSet: make(map[contract.ConversationID]map[contract.UserID]struct{})}
	if n := len(ev); n > 0 && ev[n-1].AtUs > l.endUs {
		l.endUs = ev[n-1].AtUs
	}
	for i := range ev {
		switch e := &ev[i]; e.Kind {
		case history.Invoke, history.Ok, history.Fail, history.Info:
			l.addAnswer(e)
		case history.Deliver:
			l.addDelivery(e, i)
		case history.Stored:
			l.addStored(e)
		case history.Group:
			l.addGroupMember(e)
		}
	}
	return l
}

// sortedByTime returns a copy of events sorted by AtUs, stably. It sorts indices (ties broken
// by position, which makes an unstable sort stable) and copies each event once: a stable
// sort of the events themselves moves 100-byte structs O(n log² n) times and was half of
// Check's time at 200k events.
func sortedByTime(events []history.Event) []history.Event {
	if slices.IsSortedFunc(events, func(a, b history.Event) int { return cmp.Compare(a.AtUs, b.AtUs) }) {
		return slices.Clone(events)
	}
	idx := make([]int32, len(events))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(a, b int32) int {
		return cmp.Or(cmp.Compare(events[a].AtUs, events[b].AtUs), cmp.Compare(a, b))
	})
	out := make([]history.Event, len(events))
	for i, j := range idx {
		out[i] = events[j]
	}
	return out
}

// send returns the record of k, creating it on first sight.
func (l *ledger) send(k history.Key) *send {
	s := l.sends[k]
	if s == nil {
		s = &send{key: k}
		l.sends[k] = s
		l.keys = append(l.keys, k)
	}
	return s
}

// addAnswer records an Invoke or an answer. The first Invoke and the first SEND_ACK set the
// times and the acked position; a later SEND_ACK (the writer's answer to a retry) must name
// the same commit, and one naming another message shows up in mids, where REUSED finds it.
func (l *ledger) addAnswer(e *history.Event) {
	s := l.send(e.Key())
	s.sent = true
	switch e.Kind {
	case history.Invoke:
		if !s.invoked {
			s.invoked, s.invokeUs = true, e.AtUs
			if e.Recipient != 0 {
				s.recipient = e.Recipient // the Invoke says whom the client addressed
			}
		}
	case history.Ok:
		if !s.ok {
			s.ok, s.okUs, s.okPos = true, e.AtUs, posOf(e)
		}
		s.see(posOf(e))
	case history.Fail:
		s.fail = true
	case history.Info:
		s.info = true
	}
	if s.recipient == 0 {
		s.recipient = e.Recipient
	}
	if e.Recipient == 0 && !unsetConv(e.Conversation) && unsetConv(s.group) {
		s.group = e.Conversation // addressed to no user but a conversation: a group send
	}
}

func (l *ledger) addDelivery(e *history.Event, i int) {
	s := l.send(e.Key())
	s.delivered = true
	s.see(posOf(e))
	bk := boxKey{e.Recipient, e.Key()}
	b := l.boxes[bk]
	if b == nil {
		b = &box{firstUs: e.AtUs}
		l.boxes[bk] = b
		l.boxOrder = append(l.boxOrder, bk)
		s.recips = append(s.recips, e.Recipient)
	}
	if !e.MessageID.IsZero() && !slices.Contains(b.mids, e.MessageID) {
		b.mids = append(b.mids, e.MessageID)
		if len(b.mids) == 2 {
			b.dupUs = e.AtUs
		}
	}
	if rm := (recvMid{e.Recipient, e.MessageID}); !e.MessageID.IsZero() {
		if _, seen := l.got[rm]; !seen {
			l.got[rm] = struct{}{}
			l.firsts = append(l.firsts, int32(i))
		}
	}
	if e.Lane == history.Frame && e.Recipient == e.Sender {
		l.ownCopies[e.Sender] = struct{}{}
	}
}

func (l *ledger) addStored(e *history.Event) {
	if !unsetConv(e.Conversation) {
		l.storedConv[e.Conversation] = struct{}{}
		l.storedMsg[convMid{e.Conversation, e.MessageID}] = struct{}{}
	}
	if e.Foreign {
		return // not a load message of this run: its Sender and Ordinal mean nothing
	}
	s := l.send(e.Key())
	s.stored = true
	s.see(posOf(e))
}

func posOf(e *history.Event) pos { return pos{e.MessageID, e.Conversation, e.ConvSeq} }

// see adds a position the history shows for the send.
func (s *send) see(p pos) {
	if s.anyPos.seq == 0 && p.seq != 0 {
		s.anyPos = p
	}
	if !p.mid.IsZero() && !slices.Contains(s.mids, p.mid) {
		s.mids = append(s.mids, p.mid)
	}
}

// position is where the send landed: SEND_ACK's word first (it is the commit's answer), else
// the first delivery or stored record (an info send that committed).
func (s *send) position() pos {
	if s.okPos.seq != 0 {
		return s.okPos
	}
	return s.anyPos
}

// atUs is when the send was answered ok, else when it was invoked.
func (s *send) atUs() int64 {
	if s.ok {
		return s.okUs
	}
	return s.invokeUs
}

// box returns what the send's intended recipient got of it, nil when nothing (or when it went
// to a group: see recipients).
func (l *ledger) box(s *send) *box {
	if s.recipient == 0 {
		return nil
	}
	return l.boxes[boxKey{s.recipient, s.key}]
}

// finding starts a finding about s at its position.
func (s *send) finding(v Verdict, atUs int64, detail string) Finding {
	p := s.position()
	return Finding{Verdict: v, Key: s.key, Recipient: s.recipient, MessageID: p.mid,
		Conversation: p.conv, ConvSeq: p.seq, AtUs: atUs, Detail: detail}
}

// unsetConv reports a conversation id that was not set (zero is never a valid id).
func unsetConv(c contract.ConversationID) bool { return c == contract.ConversationID{} }
