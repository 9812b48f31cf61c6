package gateway

import (
	"bytes"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// A room through a gateway against a RoomWriter stand-in: JOIN_ROOM is answered ROOM_JOINED,
// a SEND with a room target SEND_ACK with the room_seq, the event reaches the joined member
// with the room id as it spelled it, and LEAVE_ROOM is answered ROOM_LEFT REQUESTED.
func TestRoomJoinSendLeaveThroughGateway(t *testing.T) {
	h := startGateway(t, harnessOpts{})
	mid, pid := newIdentity(t, "m"), newIdentity(t, "p")
	pid.tenant = mid.tenant // rooms are per tenant
	pid.token = issue(t, pid, time.Hour)
	member, pub := h.login(mid), h.login(pid)
	room := bytes.Repeat([]byte{0xff}, 16) // kind bits set by the client: echoed as sent
	id := member.write(contract.OpJoinRoom, &qimv1.JoinRoom{RoomId: room})
	var joined qimv1.RoomJoined
	if m := member.expect(contract.OpRoomJoined, &joined); m.RequestID != id || !bytes.Equal(joined.GetRoomId(), room) {
		t.Fatalf("ROOM_JOINED request %d room %x, want %d %x", m.RequestID, joined.GetRoomId(), id, room)
	}
	pub.write(contract.OpSend, &qimv1.SendRequest{ClientMessageId: bytes.Repeat([]byte{1}, 16),
		Target: &qimv1.SendRequest_RoomId{RoomId: room}, MessageType: 1, Body: []byte("hi room")})
	var ack qimv1.SendAck
	pub.expect(contract.OpSendAck, &ack)
	var evs qimv1.RoomEvents
	member.expect(contract.OpRoomEvents, &evs)
	if !bytes.Equal(evs.GetRoomId(), room) || len(evs.GetEvents()) != 1 || evs.GetEvents()[0].GetRoomSeq() != ack.GetConversationSeq() ||
		string(evs.GetEvents()[0].GetBody()) != "hi room" {
		t.Fatalf("ROOM_EVENTS %v after SEND_ACK %v", &evs, &ack)
	}
	id = member.write(contract.OpLeaveRoom, &qimv1.LeaveRoom{RoomId: room})
	var left qimv1.RoomLeft
	if m := member.expect(contract.OpRoomLeft, &left); m.RequestID != id || contract.RoomLeftReason(left.GetReason()) != contract.RoomLeftRequested {
		t.Fatalf("LEAVE_ROOM answered request %d reason %d", m.RequestID, left.GetReason())
	}
	for _, bad := range [][]byte{nil, make([]byte, 16), []byte("short")} {
		id := member.write(contract.OpJoinRoom, &qimv1.JoinRoom{RoomId: bad})
		member.expectError(contract.ErrCodeInvalidArgument, id)
	}
	member.ping()
}
