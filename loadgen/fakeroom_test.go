package loadgen

import (
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
	r := g.rooms[string(req.GetRoomId())]
	if r == nil {
		r = &fakeRoom{seq: 1000}
		g.rooms[string(req.GetRoomId())] = r
	}
	r.members = append(r.members, w)
	seq := r.seq
	g.mu.Unlock()
	reply(w, contract.OpRoomJoined, m.RequestID, &qimv1.RoomJoined{RoomId: req.GetRoomId(), RoomSeq: seq})
}

// roomSend broadcasts one event to every member (minus the ones roomSkip drops) and answers
// SEND_ACK with its room_seq.
func (g *fakeGateway) roomSend(w *wire.Writer, user contract.UserID, reqID uint32, req *qimv1.SendRequest) {
	g.mu.Lock()
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
	for _, m := range to {
		reply(m, contract.OpRoomEvents, 0, &qimv1.RoomEvents{RoomId: req.GetRoomId(), Events: []*qimv1.RoomEvent{ev}})
	}
}
