package sdk

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

// roomGateway serves logins and rooms. The first connection answers JOIN_ROOM at room_seq 10,
// sends event 11, and dies on the first SEND without answering it; later connections answer
// JOIN_ROOM at 12 and ack a SEND with room_seq 12, then broadcast event 12. Every JOIN_ROOM and
// every SEND's client_message_id are reported on joins and sends.
func roomGateway(joins chan<- *qimv1.JoinRoom, sends chan<- []byte) func(net.Conn, *wire.Reader, *wire.Writer) {
	var conns atomic.Int32
	return func(conn net.Conn, r *wire.Reader, w *wire.Writer) {
		first := conns.Add(1) == 1
		for {
			m, err := r.ReadMessage()
			if err != nil {
				return
			}
			switch m.Opcode {
			case contract.OpAuth:
				reply(w, contract.OpAuthOK, m.RequestID, &qimv1.AuthOk{UserId: uint64(self), SessionEpoch: 1, HeartbeatIntervalMs: 60000})
			case contract.OpPullMailbox:
				reply(w, contract.OpMailboxBatch, m.RequestID, &qimv1.MailboxBatch{NextCursor: &qimv1.MailboxCursor{}})
			case contract.OpPullSessionList:
				reply(w, contract.OpSessionListBatch, m.RequestID, &qimv1.SessionListBatch{})
			case contract.OpPing:
				reply(w, contract.OpPong, m.RequestID, &qimv1.Pong{})
			case contract.OpJoinRoom:
				var j qimv1.JoinRoom
				_ = proto.Unmarshal(m.Payload, &j)
				joins <- &j
				latest := uint64(12)
				if first {
					latest = 10
				}
				reply(w, contract.OpRoomJoined, m.RequestID, &qimv1.RoomJoined{RoomId: j.GetRoomId(), RoomSeq: latest})
				if first {
					reply(w, contract.OpRoomEvents, 0, oneRoomEvent(j.GetRoomId(), 11))
				}
			case contract.OpSend:
				var s qimv1.SendRequest
				_ = proto.Unmarshal(m.Payload, &s)
				sends <- s.GetClientMessageId()
				if first {
					return // the connection dies with the SEND unanswered: its outcome is unknown
				}
				u, _ := contract.U128FromBytes(s.GetRoomId())
				conv, _ := contract.RoomConversationID(u)
				c := conv.Bytes()
				reply(w, contract.OpSendAck, m.RequestID, &qimv1.SendAck{ClientMessageId: s.GetClientMessageId(),
					MessageId: make([]byte, 16), ConversationId: c[:], ConversationSeq: 12})
				reply(w, contract.OpRoomEvents, 0, oneRoomEvent(s.GetRoomId(), 12))
			}
		}
	}
}

func oneRoomEvent(room []byte, seq uint64) *qimv1.RoomEvents {
	return &qimv1.RoomEvents{RoomId: room, Events: []*qimv1.RoomEvent{{RoomSeq: seq, SenderUserId: uint64(self), MessageType: 1}}}
}

// recv takes the next value of ch, failing the test when none comes within 10 s.
func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("nothing received within 10 s")
		var zero T
		return zero
	}
}

// Through the Client and a socket: JoinRoom, a SendRoom whose connection dies under it (sent
// again with the same id after the reconnect, answered with its room_seq), the rejoin from the
// last room_seq + 1, and LeaveRoom after Disconnect (no server needed to forget a room).
func TestClientRoomsAcrossAReconnect(t *testing.T) {
	joins, sends := make(chan *qimv1.JoinRoom, 8), make(chan []byte, 8)
	g := startFakeGateway(t, roomGateway(joins, sends))
	c := openTestClient(t, g.ln.Addr().String())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := c.JoinRoom(ctx, roomA, RoomJoinOptions{}); !errors.Is(err, ErrOffline) {
		t.Fatalf("JoinRoom before Connect: %v, want ErrOffline", err)
	}
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	waitEvent[Online](t, c, 10*time.Second)
	j, err := c.JoinRoom(ctx, roomA, RoomJoinOptions{})
	if err != nil || j.RoomSeq != 10 || j.Rejoin {
		t.Fatalf("JoinRoom: %+v %v", j, err)
	}
	if ev := waitEvent[RoomEvents](t, c, 10*time.Second); ev.Events[0].RoomSeq != 11 {
		t.Fatalf("first events %+v, want 11", ev)
	}
	type sendResult struct {
		ack RoomAck
		err error
	}
	done := make(chan sendResult, 1)
	go func() {
		ack, err := c.SendRoom(ctx, roomA, []byte("hi"), SendOptions{})
		done <- sendResult{ack, err}
	}()
	if rj := waitEvent[RoomJoined](t, c, 10*time.Second); !rj.Rejoin || rj.RoomSeq != 12 {
		t.Fatalf("after the reconnect: %+v, want a rejoin", rj)
	}
	if ev := waitEvent[RoomEvents](t, c, 10*time.Second); ev.Gap != nil || ev.Events[0].RoomSeq != 12 {
		t.Fatalf("events after the rejoin %+v, want 12 without a gap", ev)
	}
	r := recv(t, done)
	if r.err != nil || r.ack.RoomSeq != 12 {
		t.Fatalf("SendRoom: %+v %v, want room_seq 12", r.ack, r.err)
	}
	first, second := recv(t, sends), recv(t, sends)
	if string(first) != string(second) || len(first) != 16 {
		t.Fatalf("SEND ids %x and %x: the retry must reuse the client_message_id", first, second)
	}
	if j1, j2 := recv(t, joins), recv(t, joins); j1.ReplayFromRoomSeq != nil || j2.GetReplayFromRoomSeq() != 12 {
		t.Fatalf("JOIN_ROOM replay_from %v then %v, want none then 12", j1.ReplayFromRoomSeq, j2.ReplayFromRoomSeq)
	}
	if rs := c.Rooms(); len(rs) != 1 || rs[0].RoomSeq != 12 || !rs[0].Joined {
		t.Fatalf("Rooms %+v, want roomA joined at 12", rs)
	}

	c.Disconnect()
	if rs := c.Rooms(); len(rs) != 1 || rs[0].Joined {
		t.Fatalf("Rooms %+v after Disconnect, want roomA kept, not joined", rs)
	}
	if err := c.LeaveRoom(ctx, roomA); err != nil {
		t.Fatal(err)
	}
	if rs := c.Rooms(); len(rs) != 0 {
		t.Fatalf("Rooms %+v after LeaveRoom, want none", rs)
	}
	if l := waitEvent[RoomLeft](t, c, 10*time.Second); l.Room != roomA || l.Reason != contract.RoomLeftRequested {
		t.Fatalf("RoomLeft %+v", l)
	}
	if p, _ := c.Pending(ctx); len(p) != 0 {
		t.Fatalf("pending rows %+v after a room send", p)
	}
}
