package loadgen

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/chaos/history"
	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

// lgGroup is one group of a ModeGroup run: GroupSize message connections, members[i] being
// connection first+i in dial order, created at setup by members[0] with the others as initial
// members. Membership never changes during the run, so every message a member sends is
// expected in every member's mailbox, its own included (groupFlow).
//
// Why groups are created before the window over the members' own links, synchronously, like
// AUTH: the measured window must start with every group durable (GROUP_CREATED is answered
// once the CREATE is committed), and no connection goroutine exists yet to share the socket
// with. Creating the groups through the writer's admin RPC was rejected: the load generator
// talks to a gateway only, wherever the deployment is.
type lgGroup struct {
	index   int
	first   int    // connection index of members[0]
	id      []byte // group_id from GROUP_CREATED: the SEND target
	conv    contract.ConversationID
	convID  pairConv // the group's conversation as answers name it (conflicts are noted)
	members []*lgConn
}

// member returns the member that is connection idx, nil when idx is not in the group.
func (g *lgGroup) member(idx int) *lgConn {
	if i := idx - g.first; i >= 0 && i < len(g.members) {
		return g.members[i]
	}
	return nil
}

// groupMember is a connection's place in its group and what it remembers as a recipient.
type groupMember struct {
	g     *lgGroup
	index int
	out   *groupFlow // this member's sends to its group

	mu     sync.Mutex
	pushAt map[pushKey]int64 // first push (Unix µs) of messages not yet pulled here: push_pull
}

func (m *groupMember) ledger() sendLedger      { return m.out }
func (m *groupMember) conversation() *pairConv { return &m.g.convID }

type pushKey struct {
	sender uint32
	ord    uint64
}

func (m *groupMember) notePush(k pushKey, atUs int64) {
	m.mu.Lock()
	m.pushAt[k] = atUs
	m.mu.Unlock()
}

func (m *groupMember) takePush(k pushKey) (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	at, ok := m.pushAt[k]
	delete(m.pushAt, k)
	return at, ok
}

// formGroups partitions the message connections into groups of GroupSize in dial order and
// returns them, with the connections reordered for the scheduler: its round-robin sink k is
// member (k / groups) of group (k mod groups), so consecutive arrivals go to different groups
// and each group's sends rotate over its members.
func (r *runState) formGroups(conns []*lgConn) ([]*lgGroup, []*lgConn) {
	n := r.cfg.GroupSize
	r.mids = newMidIndex()
	groups := make([]*lgGroup, len(conns)/n)
	for gi := range groups {
		g := &lgGroup{index: gi, first: conns[gi*n].idx, members: conns[gi*n : gi*n+n]}
		for mi, c := range g.members {
			c.role = &groupMember{g: g, index: mi, out: newGroupFlow(n, mi), pushAt: map[pushKey]int64{}}
		}
		groups[gi] = g
	}
	sinks := make([]*lgConn, 0, len(groups)*n)
	for k := range len(groups) * n {
		sinks = append(sinks, groups[k%len(groups)].members[k/len(groups)])
	}
	return groups, sinks
}

// createGroups creates every group, DialConcurrency at a time; one that cannot be created
// fails the run's setup.
func (r *runState) createGroups(ctx context.Context, groups []*lgGroup) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.cfg.DialConcurrency)
	for _, grp := range groups {
		g.Go(func() error { return r.createGroup(gctx, grp) })
	}
	return g.Wait()
}

// createGroup sends CREATE_GROUP on the creator's link and reads it until GROUP_CREATED or
// ERROR answers, at most AckTimeout. Pushes of the group's CREATE message read meanwhile are
// dropped (the first pull fetches it), server PINGs are answered.
func (r *runState) createGroup(ctx context.Context, g *lgGroup) error {
	creator := g.members[0]
	req := contract.U128{Hi: r.runID, Lo: uint64(g.index) + 1}
	rb := req.Bytes()
	others := make([]uint64, 0, len(g.members)-1)
	for _, c := range g.members[1:] {
		others = append(others, uint64(c.user))
	}
	payload, err := proto.Marshal(&qimv1.CreateGroup{ClientRequestId: rb[:], MemberUserIds: others,
		Name: fmt.Sprintf("loadgen %016x #%d", r.runID, g.index)})
	if err != nil {
		return fmt.Errorf("loadgen: encode CREATE_GROUP: %w", err)
	}
	l := creator.current()
	fail := func(err error) error {
		return fmt.Errorf("loadgen: CREATE_GROUP of group %d (%d members) by user %d: %w", g.index, len(g.members), creator.user, err)
	}
	_ = l.nc.SetReadDeadline(time.Now().Add(r.cfg.AckTimeout))
	unwatch := context.AfterFunc(ctx, func() { _ = l.nc.SetReadDeadline(time.Unix(1, 0)) })
	defer func() { unwatch(); _ = l.nc.SetReadDeadline(time.Time{}) }()
	id := creator.nextID.Add(1)
	if err := l.w.Send(ctx, wire.Message{Opcode: contract.OpCreateGroup, RequestID: id, Payload: payload}); err != nil {
		return fail(err)
	}
	for {
		m, err := l.rd.ReadMessage()
		if err != nil {
			return fail(err)
		}
		switch {
		case m.Opcode == contract.OpPing:
			pong, _ := proto.Marshal(&qimv1.Pong{})
			_ = l.w.Send(ctx, wire.Message{Opcode: contract.OpPong, RequestID: m.RequestID, Payload: pong})
		case m.RequestID != id:
		case m.Opcode == contract.OpError:
			var e qimv1.ErrorFrame
			_ = proto.Unmarshal(m.Payload, &e)
			return fail(fmt.Errorf("refused: %s", contract.ErrorCode(e.GetCode())))
		case m.Opcode == contract.OpGroupCreated:
			return r.groupCreated(g, req, m.Payload)
		}
	}
}

// groupCreated takes the group's ids from GROUP_CREATED and records the membership in the
// history. A conversation other than the one contract.DeriveGroupID names is noted, not fatal:
// the run then measures the group the server says it made.
func (r *runState) groupCreated(g *lgGroup, req contract.U128, payload []byte) error {
	var gc qimv1.GroupCreated
	if err := proto.Unmarshal(payload, &gc); err != nil {
		return fmt.Errorf("loadgen: undecodable GROUP_CREATED: %w", err)
	}
	conv, err := contract.U128FromBytes(gc.GetConversationId())
	if err != nil || len(gc.GetGroupId()) != 16 {
		return fmt.Errorf("loadgen: GROUP_CREATED of group %d: group id %x, conversation %x", g.index,
			gc.GetGroupId(), gc.GetConversationId())
	}
	creator := g.members[0]
	if want := contract.DeriveGroupID(r.cfg.Tenant, creator.user, req); want != contract.ConversationID(conv) {
		r.noteError(fmt.Errorf("loadgen: group %d created as conversation %s, DeriveGroupID says %s", g.index, conv, want))
	}
	g.id, g.conv = gc.GetGroupId(), contract.ConversationID(conv)
	g.convID.note(r, g.conv)
	if r.hist != nil {
		at := time.Now().UnixMicro()
		for _, c := range g.members {
			r.hist.Record(history.Event{Kind: history.Group, AtUs: at, Lane: history.Frame, Sender: creator.user,
				Recipient: c.user, Conversation: g.conv})
		}
	}
	return nil
}

// isControl reports a membership CONTROL message: the group's own CREATE, not a load message.
func isControl(ev *qimv1.MailboxEvent) bool {
	return ev.GetMessageType() == uint32(contract.MessageControl)
}

// groupEvent accounts one event of c's group mailbox, pushed or pulled (kind), and reports
// whether another member sent it (a push of one asks for a pull round). An event whose body is
// absent (nil: not inlined, the fanout was over contract.InlineBodyBudgetBytes) is identified
// by its message_id through the run's midIndex, and waits there for its SEND_ACK if it came
// first; an empty non-nil body is a real body and goes through parseBody like any other.
func (c *lgConn) groupEvent(kind history.Kind, ev *qimv1.MailboxEvent, at time.Time) bool {
	if isControl(ev) {
		if kind == history.Deliver {
			atomic.AddInt64(&c.r.live.ControlEvents, 1)
		}
		return false
	}
	own := contract.UserID(ev.GetSenderUserId()) == c.user
	if own && kind == history.Deliver {
		atomic.AddInt64(&c.r.live.OwnCopies, 1)
	}
	if ev.Body == nil {
		if h, ok := c.r.mids.lookup(parkedEntry{c: c, ev: ev, kind: kind, at: at}); ok {
			return c.groupEntry(kind, ev, h, at)
		}
		return !own
	}
	h, err := parseBody(ev.GetBody())
	if err != nil {
		if !own {
			atomic.AddInt64(&c.r.live.ForeignEvents, 1)
		}
		return false
	}
	return c.groupEntry(kind, ev, h, at)
}

// groupEntry accounts a group event whose header h is known, from its body or its message_id.
// It must name a send of this run by a member of c's group: c itself for an own copy (one that
// does not is skipped uncounted, as the ledger never looks at foreign own copies), another
// member otherwise (one that does not is a foreign event).
func (c *lgConn) groupEntry(kind history.Kind, ev *qimv1.MailboxEvent, h bodyHeader, at time.Time) bool {
	own := contract.UserID(ev.GetSenderUserId()) == c.user
	from := c.member().g.member(int(h.sender))
	if h.run != c.r.runID || from == nil || own != (from == c) {
		if !own {
			atomic.AddInt64(&c.r.live.ForeignEvents, 1)
		}
		return false
	}
	c.recordMailbox(kind, ev, h, at)
	atUs := at.UnixMicro()
	switch {
	case kind == history.Push && own: // the history's only: own copies are measured when pulled
	case kind == history.Push:
		c.groupPushed(from, h, atUs)
	case own:
		c.groupOwnCopy(h, ev.GetMessageId(), atUs)
	default:
		c.groupPulled(from, h, ev.GetMessageId(), atUs)
	}
	return !own
}

// fileAck files the header of c's acknowledged group send p under the message_id SEND_ACK
// named, and accounts the body-less entries of it that arrived first, at their arrival times.
// The sender's clock stamped p.at into the body too (sendOne), so sentUs is the body's.
func (c *lgConn) fileAck(p *pendingReq, mid []byte) {
	h := bodyHeader{run: c.r.runID, sentUs: p.at.UnixMicro(), sender: uint32(c.idx), ordinal: p.ord}
	for _, e := range c.r.mids.file(mid, h) {
		e.c.groupEntry(e.kind, e.ev, h, e.at)
	}
	c.retireIfDone(p.ord) // every member may have pulled it before the ACK
}

// groupPushed records a push of member from's message h to c.
func (c *lgConn) groupPushed(from *lgConn, h bodyHeader, nowUs int64) {
	first, sinceAck, pulled := from.member().out.pushed(h.ordinal, c.member().index, nowUs)
	if !first {
		return
	}
	c.r.rec.Record(SegSendPush, nowUs-h.sentUs)
	if sinceAck >= 0 {
		c.r.rec.Record(SegAckPush, sinceAck)
	}
	if !pulled {
		c.member().notePush(pushKey{h.sender, h.ordinal}, nowUs)
	}
}

// groupPulled records c's pull of member from's message h: the first one per member is an
// end-to-end sample and a delivered mailbox entry.
func (c *lgConn) groupPulled(from *lgConn, h bodyHeader, mid []byte, atUs int64) {
	if !from.member().out.pulled(h.ordinal, c.member().index, mid) {
		return
	}
	c.r.rec.Record(SegEndToEnd, atUs-h.sentUs)
	if pushUs, ok := c.member().takePush(pushKey{h.sender, h.ordinal}); ok && atUs >= pushUs {
		c.r.rec.Record(SegPushPull, atUs-pushUs)
	}
	c.r.countEntry(atUs)
	from.retireIfDone(h.ordinal)
}

// groupOwnCopy checks c's own copy of its message h: an expected entry like any member's, but
// not a latency sample (the sender's copy says nothing about fanout to others).
func (c *lgConn) groupOwnCopy(h bodyHeader, mid []byte, atUs int64) {
	if c.member().out.pulled(h.ordinal, c.member().index, mid) {
		c.r.countEntry(atUs)
		c.retireIfDone(h.ordinal)
	}
}

// retireIfDone drops c's send ord from the run's midIndex once every member pulled it: no
// entry of it is expected any more, which is what bounds the index.
func (c *lgConn) retireIfDone(ord uint64) {
	if mid, ok := c.member().out.doneMid(ord); ok {
		c.r.mids.retire(mid)
	}
}

// countEntry counts one delivered mailbox entry (group mode), inside the window or not.
func (r *runState) countEntry(atUs int64) {
	r.rec.CountDelivered()
	r.probe.delivered.Add(1)
	if atUs*1000 < r.endNs.Load() {
		r.probe.entriesInWindow.Add(1)
	}
}
