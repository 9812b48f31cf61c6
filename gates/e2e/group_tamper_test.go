package e2e

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

// tamperProxy stands between the scenarios and the real gateway and rewrites the frames the
// server sends, so a scenario can be run against a server that breaks exactly one group rule
// without touching server code. Uplink bytes pass through untouched.
type tamperProxy struct {
	ln      net.Listener
	target  string
	rewrite func(*wire.Message)
	wg      sync.WaitGroup
}

func startTamperProxy(t *testing.T, target string, rewrite func(*wire.Message)) *tamperProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tamperProxy{ln: ln, target: target, rewrite: rewrite}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

func (p *tamperProxy) Addr() string { return p.ln.Addr().String() }

func (p *tamperProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.pipe(c)
	}
}

// pipe relays one connection until either side closes it.
func (p *tamperProxy) pipe(client net.Conn) {
	defer p.wg.Done()
	defer client.Close()
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer server.Close()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		_, _ = io.Copy(server, client)
		server.Close()
	}()
	r, w := wire.NewReader(server), wire.NewWriter(client)
	defer w.Close()
	for {
		m, err := r.ReadMessage()
		if err != nil {
			return
		}
		p.rewrite(&m)
		m.Flags = 0
		if err := w.Send(context.Background(), m); err != nil {
			return
		}
	}
}

// brokenServer is one deliberately wrong server behaviour, the scenario that must catch it and
// a fragment of the failure it must report (so it fails for this reason, not another).
type brokenServer struct {
	name     string
	scenario string
	want     string
	rewrite  func(*wire.Message)
}

func brokenServers() []brokenServer {
	return []brokenServer{
		{"sender-copy-without-client-message-id", "group-send-reaches-every-member-online-and-offline", "alice's laptop",
			onEvents(func(ev *qimv1.MailboxEvent) { ev.ClientMessageId = nil })},
		{"history-ignores-joined-at", "group-late-member-sees-nothing-before-join", "carol's history (NEWER, pages of 2) holds seqs [1 4 5]",
			onHistory(leakBelow)},
		{"history-ignores-left-at", "group-leaver-reads-up-to-leave-and-nothing-after", "bob's history (NEWER, pages of 2), message 2: seq 102",
			onHistory(leakAbove)},
		{"control-counted-as-unread", "group-session-row-exact-unread-without-control", "want kind 2, group",
			onSessions(func(s *qimv1.SessionEntry) { s.UnreadCount += 2 })},
		{"leave-reported-as-remove", "group-membership-control-messages-in-order", "want LEAVE at seq",
			onEvents(leaveAsRemove)},
	}
}

func isGroup(conv []byte) bool {
	c, err := contract.ParseConversationID(conv)
	return err == nil && c.Kind() == contract.KindGroup
}

// onEvents rewrites every group event of MAILBOX_BATCH and PUSH_EVENTS.
func onEvents(f func(*qimv1.MailboxEvent)) func(*wire.Message) {
	return func(m *wire.Message) {
		var evs []*qimv1.MailboxEvent
		var msg proto.Message
		switch m.Opcode {
		case contract.OpMailboxBatch:
			b := &qimv1.MailboxBatch{}
			msg = b
			if proto.Unmarshal(m.Payload, b) != nil {
				return
			}
			evs = b.GetEntries()
		case contract.OpPushEvents:
			b := &qimv1.PushEvents{}
			msg = b
			if proto.Unmarshal(m.Payload, b) != nil {
				return
			}
			evs = b.GetEvents()
		default:
			return
		}
		for _, ev := range evs {
			if isGroup(ev.GetConversationId()) {
				f(ev)
			}
		}
		m.Payload, _ = proto.Marshal(msg)
	}
}

// onHistory rewrites the record list of every group HISTORY_BATCH.
func onHistory(f func([]*qimv1.HistoryMessage) []*qimv1.HistoryMessage) func(*wire.Message) {
	return func(m *wire.Message) {
		var b qimv1.HistoryBatch
		if m.Opcode != contract.OpHistoryBatch || proto.Unmarshal(m.Payload, &b) != nil || !isGroup(b.GetConversationId()) ||
			len(b.GetRecords()) == 0 {
			return
		}
		b.Records = f(b.GetRecords())
		m.Payload, _ = proto.Marshal(&b)
	}
}

// onSessions rewrites every GROUP row of SESSION_LIST_BATCH.
func onSessions(f func(*qimv1.SessionEntry)) func(*wire.Message) {
	return func(m *wire.Message) {
		var b qimv1.SessionListBatch
		if m.Opcode != contract.OpSessionListBatch || proto.Unmarshal(m.Payload, &b) != nil {
			return
		}
		for _, s := range b.GetSessions() {
			if contract.ConversationKind(s.GetConversationKind()) == contract.KindGroup {
				f(s)
			}
		}
		m.Payload, _ = proto.Marshal(&b)
	}
}

// leakBelow adds a record at seq 1 (below any late member's join) when the page starts above it,
// as a server that ignored joined_at would return the group's earliest message.
func leakBelow(rs []*qimv1.HistoryMessage) []*qimv1.HistoryMessage {
	if rs[0].GetConversationSeq() <= 1 {
		return rs
	}
	leak := proto.Clone(rs[0]).(*qimv1.HistoryMessage)
	leak.ConversationSeq, leak.MessageId, leak.Body = 1, NewCmid(), []byte("from before you joined")
	return append([]*qimv1.HistoryMessage{leak}, rs...)
}

// leakAbove adds a record after the page's last one, as a server that ignored left_at would
// return a message sent after the reader left.
func leakAbove(rs []*qimv1.HistoryMessage) []*qimv1.HistoryMessage {
	leak := proto.Clone(rs[len(rs)-1]).(*qimv1.HistoryMessage)
	leak.ConversationSeq, leak.MessageId, leak.Body = leak.GetConversationSeq()+100, NewCmid(), []byte("after you left")
	return append(rs, leak)
}

// leaveAsRemove rewrites a LEAVE CONTROL body into a REMOVE.
func leaveAsRemove(ev *qimv1.MailboxEvent) {
	ch, err := membershipOf(ev)
	if err != nil || ch == nil || contract.MembershipOp(ch.GetOp()) != contract.MembershipLeave {
		return
	}
	ch.Op = uint32(contract.MembershipRemove)
	ev.Body, _ = proto.Marshal(ch)
}
