package loadgen

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/contract/devtoken"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

// fakeGateway stands in for the gateway and the pipeline behind it in unit tests of the
// connection machinery: it commits every SEND at once (one conversation per pair), puts the
// message into both users' mailboxes (the sender's copy carries its client_message_id), pushes
// it to the peer, and serves PULL_MAILBOX and PULL_HISTORY from memory. drop closes every
// socket and refuses new ones for a while: a gateway crash as a client sees it, with the
// committed state surviving like the real one's in Kafka and Redis. While hold is set, SENDs
// are committed but not answered (the ACK is lost with the gateway); the next refuseHistory
// PULL_HISTORYs are answered ERROR UNAVAILABLE. Groups are served by fakegroup_test.go.
type fakeGateway struct {
	t             *testing.T
	secret        []byte
	addr          string
	hold          atomic.Bool
	refuseHistory atomic.Int64

	mu      sync.Mutex
	ln      net.Listener
	live    map[contract.UserID]*wire.Writer
	socks   map[net.Conn]bool
	mailbox map[contract.UserID][]*qimv1.MailboxEvent
	convs   map[contract.ConversationID][]*qimv1.HistoryMessage
	groups  map[contract.ConversationID][]contract.UserID // fakegroup_test.go
	rooms   map[string]*fakeRoom                          // fakeroom_test.go
	// roomSkip, set before a run, loses the n-th room delivery when it answers true.
	roomSkip func(n int64) bool
	loss     *roomLoss  // fakeroom_test.go; nil never loses the RoomWriter
	mangle   mangleFunc // fakegroup_test.go; nil delivers every entry
	entries  int64      // group mailbox entries so far
	nextMsg  uint64
	auths    int
	wg       sync.WaitGroup
}

func newFakeGateway(t *testing.T) *fakeGateway {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &fakeGateway{t: t, secret: []byte("fake-gateway-secret-of-32-bytes!"), addr: ln.Addr().String(), ln: ln,
		live: map[contract.UserID]*wire.Writer{}, socks: map[net.Conn]bool{},
		mailbox: map[contract.UserID][]*qimv1.MailboxEvent{}, convs: map[contract.ConversationID][]*qimv1.HistoryMessage{},
		groups: map[contract.ConversationID][]contract.UserID{}, rooms: map[string]*fakeRoom{}}
	g.wg.Add(1)
	go g.accept(ln)
	t.Cleanup(func() { g.drop(); g.wg.Wait() })
	return g
}

func (g *fakeGateway) accept(ln net.Listener) {
	defer g.wg.Done()
	for {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		g.mu.Lock()
		g.socks[nc] = true
		g.mu.Unlock()
		g.wg.Add(1)
		go g.serve(nc)
	}
}

// drop closes the listener and every socket.
func (g *fakeGateway) drop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ln != nil {
		g.ln.Close()
		g.ln = nil
	}
	for nc := range g.socks {
		nc.Close()
	}
}

// restart listens again on the same address.
func (g *fakeGateway) restart() {
	ln, err := net.Listen("tcp", g.addr)
	if err != nil {
		g.t.Errorf("fake gateway: listen again: %v", err)
		return
	}
	g.mu.Lock()
	g.ln = ln
	g.mu.Unlock()
	g.wg.Add(1)
	go g.accept(ln)
}

func (g *fakeGateway) serve(nc net.Conn) {
	defer g.wg.Done()
	defer nc.Close()
	rd := wire.NewReader(nc)
	user, err := g.auth(nc, rd)
	if err != nil {
		return
	}
	w := wire.NewWriter(nc)
	defer w.Close()
	g.mu.Lock()
	g.live[user] = w
	g.auths++
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		if g.live[user] == w {
			delete(g.live, user)
		}
		delete(g.socks, nc)
		g.mu.Unlock()
	}()
	for {
		m, err := rd.ReadMessage()
		if err != nil {
			return
		}
		g.handle(w, user, m)
	}
}

func (g *fakeGateway) auth(nc net.Conn, rd *wire.Reader) (contract.UserID, error) {
	m, err := rd.ReadMessage()
	if err != nil {
		return 0, err
	}
	var req qimv1.AuthRequest
	if m.Opcode != contract.OpAuth || proto.Unmarshal(m.Payload, &req) != nil {
		return 0, errors.New("fake gateway: not an AUTH")
	}
	claims, err := devtoken.Verify(g.secret, req.GetToken(), time.Now().UnixMilli())
	if err != nil {
		return 0, err
	}
	payload, _ := proto.Marshal(&qimv1.AuthOk{UserId: uint64(claims.User), HeartbeatIntervalMs: 1000})
	frame, _ := wire.AppendMessage(nil, wire.Message{Opcode: contract.OpAuthOK, RequestID: m.RequestID, Payload: payload})
	_, err = nc.Write(frame)
	return claims.User, err
}

func (g *fakeGateway) handle(w *wire.Writer, user contract.UserID, m wire.Message) {
	switch m.Opcode {
	case contract.OpCreateGroup:
		g.createGroup(w, user, m)
	case contract.OpJoinRoom:
		g.joinRoom(w, m)
	case contract.OpSend:
		var req qimv1.SendRequest
		_ = proto.Unmarshal(m.Payload, &req)
		if req.GetRoomId() != nil {
			g.roomSend(w, user, m.RequestID, &req)
			return
		}
		if req.GetGroupId() != nil {
			g.groupSend(w, user, m.RequestID, &req)
			return
		}
		ack, push, to := g.commit(user, &req)
		if !g.hold.Load() {
			reply(w, contract.OpSendAck, m.RequestID, ack)
		}
		if to != nil {
			reply(to, contract.OpPushEvents, 0, &qimv1.PushEvents{Events: []*qimv1.MailboxEvent{push}})
		}
	case contract.OpPullMailbox:
		var req qimv1.PullMailbox
		_ = proto.Unmarshal(m.Payload, &req)
		reply(w, contract.OpMailboxBatch, m.RequestID, g.pull(user, req.GetCursor().GetMailboxSeq()))
	case contract.OpPullHistory:
		var req qimv1.PullHistory
		_ = proto.Unmarshal(m.Payload, &req)
		if g.refuseHistory.Add(-1) >= 0 {
			reply(w, contract.OpError, m.RequestID, &qimv1.ErrorFrame{Code: uint32(contract.ErrCodeUnavailable),
				RequestOpcode: uint32(contract.OpPullHistory)})
			return
		}
		reply(w, contract.OpHistoryBatch, m.RequestID, g.history(&req))
	case contract.OpPing:
		reply(w, contract.OpPong, m.RequestID, &qimv1.Pong{})
	}
}

// commit stores one message and returns its SEND_ACK, the peer's mailbox event and the peer's
// live writer (nil when the peer is offline).
func (g *fakeGateway) commit(user contract.UserID, req *qimv1.SendRequest) (*qimv1.SendAck, *qimv1.MailboxEvent, *wire.Writer) {
	peer := contract.UserID(req.GetPeerUserId())
	conv := contract.DirectConversationID(contract.TenantID{}, user, peer)
	cb := conv.Bytes()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.nextMsg++
	mid := contract.U128{Hi: 1, Lo: g.nextMsg}.Bytes()
	seq := uint64(len(g.convs[conv]) + 1)
	g.convs[conv] = append(g.convs[conv], &qimv1.HistoryMessage{MessageId: mid[:], ConversationId: cb[:],
		ConversationSeq: seq, SenderUserId: uint64(user), Body: req.GetBody()})
	event := func(to contract.UserID, cmid []byte) *qimv1.MailboxEvent {
		ev := &qimv1.MailboxEvent{MailboxSeq: uint64(len(g.mailbox[to]) + 1), EventType: 1, MessageId: mid[:],
			ConversationId: cb[:], ConversationSeq: seq, SenderUserId: uint64(user), Body: req.GetBody(), ClientMessageId: cmid}
		g.mailbox[to] = append(g.mailbox[to], ev)
		return ev
	}
	event(user, req.GetClientMessageId())
	push := event(peer, nil)
	return &qimv1.SendAck{ClientMessageId: req.GetClientMessageId(), MessageId: mid[:], ConversationId: cb[:],
		ConversationSeq: seq}, push, g.live[peer]
}

// pull serves a mailbox page of at most 16 events after cursor, small enough that a run needs
// several pages.
func (g *fakeGateway) pull(user contract.UserID, cursor uint64) *qimv1.MailboxBatch {
	g.mu.Lock()
	defer g.mu.Unlock()
	box := g.mailbox[user]
	from := min(int(cursor), len(box))
	to := min(from+16, len(box))
	b := &qimv1.MailboxBatch{Entries: box[from:to], HasMore: to < len(box),
		NextCursor: &qimv1.MailboxCursor{MailboxSeq: uint64(to)}}
	return b
}

// history serves a NEWER page of at most 16 records after the anchor.
func (g *fakeGateway) history(req *qimv1.PullHistory) *qimv1.HistoryBatch {
	conv, _ := contract.U128FromBytes(req.GetConversationId())
	g.mu.Lock()
	defer g.mu.Unlock()
	recs := g.convs[contract.ConversationID(conv)]
	from := min(int(req.GetAnchorSeq()), len(recs))
	to := min(from+16, len(recs))
	return &qimv1.HistoryBatch{ConversationId: req.GetConversationId(), Records: recs[from:to], HasMore: to < len(recs)}
}

func reply(w *wire.Writer, op contract.Opcode, id uint32, msg proto.Message) {
	payload, _ := proto.Marshal(msg)
	_ = w.Send(context.Background(), wire.Message{Opcode: op, RequestID: id, Payload: payload})
}

// fakeConfig is a small run against gw: three pairs and two control connections, with short
// timeouts so a test that loses messages ends quickly.
func fakeConfig(gw *fakeGateway, rate float64, d time.Duration) Config {
	return Config{Gateway: gw.addr, TokenSecret: gw.secret, Rate: rate, Duration: d, Connections: 6,
		PingConnections: 2, AckTimeout: 2 * time.Second, SettleTimeout: 10 * time.Second, SettleIdle: 2 * time.Second,
		Window: time.Second}
}

// authCount is how many AUTHs the gateway accepted.
func (g *fakeGateway) authCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.auths
}
