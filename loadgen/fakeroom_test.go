package loadgen

import (
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

// fakeRoom is one room of the fake gateway: its members' writers and its room_seq. The
// gateway's roomSkip decides which deliveries are lost (n counts them over its life, from 1).
type fakeRoom struct {
	members []*wire.Writer
	seq     uint64
}

// joinRoom serves JOIN_ROOM: the connection becomes a member, answered ROOM_JOINED.
func (g *fakeGateway) joinRoom(w *wire.Writer, m wire.Message) {
	var req qimv1.JoinRoom
	_ = proto.Unmarshal(m.Payload, &req)
	g.mu.Lock()
	if g.loss.refusing() {
		g.mu.Unlock()
		reply(w, contract.OpError, m.RequestID, &qimv1.ErrorFrame{Code: uint32(contract.ErrCodeUnavailable)})
		return
	}
	truncated := g.loss != nil && g.loss.lost && req.ReplayFromRoomSeq != nil && !g.loss.keepReplay
	r := g.rooms[string(req.GetRoomId())]
	if r == nil {
		r = &fakeRoom{seq: 1000}
		g.rooms[string(req.GetRoomId())] = r
	}
	r.members = append(r.members, w)
	seq := r.seq
	g.mu.Unlock()
	reply(w, contract.OpRoomJoined, m.RequestID, &qimv1.RoomJoined{RoomId: req.GetRoomId(), RoomSeq: seq, ReplayTruncated: truncated})
}

// roomSend broadcasts one event to every member (minus the ones roomSkip drops) and answers
// SEND_ACK with its room_seq.
func (g *fakeGateway) roomSend(w *wire.Writer, user contract.UserID, reqID uint32, req *qimv1.SendRequest) {
	g.mu.Lock()
	if g.loss.refusing() || g.loss.loseAt(g) {
		g.mu.Unlock()
		reply(w, contract.OpError, reqID, &qimv1.ErrorFrame{Code: uint32(contract.ErrCodeUnavailable)})
		return
	}
	r := g.rooms[string(req.GetRoomId())]
	r.seq++
	ev := &qimv1.RoomEvent{RoomSeq: r.seq, SenderUserId: uint64(user), MessageType: req.GetMessageType(), Body: req.GetBody()}
	var to []*wire.Writer
	for _, m := range r.members {
		g.entries++
		if g.roomSkip == nil || !g.roomSkip(g.entries) {
			to = append(to, m)
		}
	}
	g.mu.Unlock()
	reply(w, contract.OpSendAck, reqID, &qimv1.SendAck{ClientMessageId: req.GetClientMessageId(), MessageId: make([]byte, 16),
		ConversationSeq: ev.GetRoomSeq()})
	evs := []*qimv1.RoomEvent{ev}
	if l := g.loss; l != nil && l.lost && l.dupOnce && len(to) > 0 {
		l.dupOnce, evs = false, append(evs, ev)
	}
	for _, m := range to {
		reply(m, contract.OpRoomEvents, 0, &qimv1.RoomEvents{RoomId: req.GetRoomId(), Events: evs})
	}
}

// roomLoss loses the fake's "RoomWriter" at the at-th room send: every member is told
// ROOM_LEFT UNAVAILABLE, sends and joins are refused UNAVAILABLE for down, then the rooms
// resume in a new epoch (room_seq from 1<<40) and rejoins with a replay are answered
// replay_truncated, unless keepReplay. Guarded by the gateway's mu.
type roomLoss struct {
	at         int64
	down       time.Duration
	keepReplay bool
	dupOnce    bool // deliver the first event after the loss that has members twice

	sends int64
	lost  bool
	upAt  time.Time
}

func (l *roomLoss) refusing() bool { return l != nil && l.lost && time.Now().Before(l.upAt) }

// loseAt counts a room send and, at the at-th, loses every room's members and buffer.
func (l *roomLoss) loseAt(g *fakeGateway) bool {
	if l == nil || l.lost {
		return false
	}
	if l.sends++; l.sends != l.at {
		return false
	}
	l.lost, l.upAt = true, time.Now().Add(l.down)
	for id, r := range g.rooms {
		for _, w := range r.members {
			reply(w, contract.OpRoomLeft, 0, &qimv1.RoomLeft{RoomId: []byte(id), Reason: uint32(contract.RoomLeftUnavailable)})
		}
		r.members, r.seq = nil, 1<<40
	}
	return true
}
