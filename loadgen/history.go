package loadgen

import (
	"fmt"
	"sync"
	"time"

	"github.com/qim-dev/qim/chaos/history"
	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// The frame lane's history (Config.History) is recorded where each fact is observed, with the
// time it was observed: Invoke before the SEND frame is written (so the record exists before
// anything can answer it), Ok/Fail/Info where the answer, timeout or loss is handled, and
// Deliver/Push for every entry of this run a recipient reads. Every recorder call is guarded by
// a nil check so a perf run (History nil) builds no events.

// recordSend records an event of one of c's own sends: Invoke, Fail or Info.
func (c *lgConn) recordSend(kind history.Kind, ord uint64, at time.Time, code contract.ErrorCode) {
	if c.r.hist == nil {
		return
	}
	e := c.sendEvent(kind, ord, at)
	e.Code = code
	c.r.hist.Record(e)
}

// sendEvent is an event of c's send ord: addressed to the peer, or in group mode to the group's
// conversation (Recipient 0: the checker takes the recipients from the group's membership).
func (c *lgConn) sendEvent(kind history.Kind, ord uint64, at time.Time) history.Event {
	e := history.Event{Kind: kind, AtUs: at.UnixMicro(), Lane: history.Frame, Sender: c.user, Ordinal: ord}
	if c.member() != nil {
		e.Conversation = c.member().g.conv
	} else {
		e.Recipient = c.direct().peer.user
	}
	return e
}

// recordAck records the Ok of ord with the commit SEND_ACK named.
func (c *lgConn) recordAck(ord uint64, at time.Time, ack *qimv1.SendAck) {
	if c.r.hist == nil {
		return
	}
	e := c.sendEvent(history.Ok, ord, at)
	e.MessageID = contract.MessageID(idOf(ack.GetMessageId()))
	e.Conversation = contract.ConversationID(idOf(ack.GetConversationId()))
	e.ConvSeq = ack.GetConversationSeq()
	c.r.hist.Record(e)
	c.role.conversation().note(c.r, e.Conversation)
}

// recordOwnCopy records c's own mailbox copy of its message (Deliver or Push with Recipient ==
// Sender). An own copy that is not a load message of this run is skipped without a count, as
// the ledger never looks at own copies.
func (c *lgConn) recordOwnCopy(kind history.Kind, ev *qimv1.MailboxEvent, at time.Time) {
	if c.r.hist == nil {
		return
	}
	h, err := parseBody(ev.GetBody())
	if err != nil || h.run != c.r.runID || int(h.sender) != c.idx {
		return
	}
	c.recordMailbox(kind, ev, h, at)
}

// recordMailbox records a mailbox entry c received whose body h names a send of this run.
func (c *lgConn) recordMailbox(kind history.Kind, ev *qimv1.MailboxEvent, h bodyHeader, at time.Time) {
	if c.r.hist == nil {
		return
	}
	e := history.Event{Kind: kind, AtUs: at.UnixMicro(), Lane: history.Frame, Sender: c.r.user(int(h.sender)),
		Ordinal: h.ordinal, Recipient: c.user, MessageID: contract.MessageID(idOf(ev.GetMessageId())),
		Conversation: contract.ConversationID(idOf(ev.GetConversationId())), ConvSeq: ev.GetConversationSeq(),
		MailboxSeq: ev.GetMailboxSeq()}
	c.r.hist.Record(e)
	if kind == history.Deliver {
		c.role.conversation().note(c.r, e.Conversation)
	}
}

// idOf decodes a 16-byte wire id; anything else (a server bug the checker will see as a
// missing id) is zero.
func idOf(b []byte) contract.U128 {
	u, _ := contract.U128FromBytes(b)
	return u
}

// pairConv is the conversation a pair's messages were committed to, as the first SEND_ACK or
// delivery naming one said; the stored read (stored.go) pages through it. Both connections of
// the pair share it. A second, different id is a server fault worth one noted error: a direct
// conversation between two users is unique.
type pairConv struct {
	mu       sync.Mutex
	conv     contract.ConversationID
	known    bool
	conflict bool
}

func (p *pairConv) note(r *runState, conv contract.ConversationID) {
	if contract.U128(conv).IsZero() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case !p.known:
		p.conv, p.known = conv, true
	case p.conv != conv && !p.conflict:
		p.conflict = true
		r.noteError(fmt.Errorf("loadgen: one pair's messages named two conversations, %s and %s", p.conv, conv))
	}
}

// conversation returns the pair's conversation, if any answer or delivery named one.
func (p *pairConv) conversation() (contract.ConversationID, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conv, p.known
}
