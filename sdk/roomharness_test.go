package sdk

// Helpers of the room tests: the harness plays the gateway's side of rooms.

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// Two rooms: a small app-chosen id, and one whose top 4 bits the server replaces (ROOM kind).
var roomA, roomB = contract.U128{Lo: 0x2a}, contract.U128{Hi: 0x7 << 60, Lo: 5}

// roomCall hands the engine an app room call, as the connection goroutine does.
func (h *harness) roomCall(op roomOp, room contract.U128, opts RoomJoinOptions) *roomCmd {
	h.t.Helper()
	key, err := roomKey(room)
	if err != nil {
		h.t.Fatal(err)
	}
	cmd := &roomCmd{op: op, room: room, key: key, opts: opts, reply: make(chan roomResult, 1)}
	h.e.startRoom(cmd, h.now)
	return cmd
}

// answer is the call's answer; the engine must have given it already.
func answer(t *testing.T, cmd *roomCmd) roomResult {
	t.Helper()
	select {
	case r := <-cmd.reply:
		return r
	default:
		t.Fatal("the call is not answered")
		return roomResult{}
	}
}

func unanswered(t *testing.T, cmd *roomCmd) {
	t.Helper()
	if len(cmd.reply) != 0 {
		t.Fatalf("answered early: %+v", <-cmd.reply)
	}
}

// joinSent is the last JOIN_ROOM for room, decoded.
func (h *harness) joinSent(room contract.U128) (sentFrame, *qimv1.JoinRoom) {
	h.t.Helper()
	fs := h.sent(contract.OpJoinRoom)
	for i := len(fs) - 1; i >= 0; i-- {
		var j qimv1.JoinRoom
		if err := proto.Unmarshal(fs[i].payload, &j); err != nil {
			h.t.Fatal(err)
		}
		if b := room.Bytes(); string(j.GetRoomId()) == string(b[:]) {
			return fs[i], &j
		}
	}
	h.t.Fatalf("no JOIN_ROOM for room %s", room)
	return sentFrame{}, nil
}

func (h *harness) joinsSent(room contract.U128) int {
	n := 0
	for _, f := range h.sent(contract.OpJoinRoom) {
		var j qimv1.JoinRoom
		_ = proto.Unmarshal(f.payload, &j)
		if b := room.Bytes(); string(j.GetRoomId()) == string(b[:]) {
			n++
		}
	}
	return n
}

// answerJoin answers the last JOIN_ROOM of room with ROOM_JOINED, echoing its spelling.
func (h *harness) answerJoin(room contract.U128, latest uint64, truncated bool) {
	h.t.Helper()
	f, j := h.joinSent(room)
	h.frame(contract.OpRoomJoined, f.id, &qimv1.RoomJoined{RoomId: j.GetRoomId(), RoomSeq: latest, ReplayTruncated: truncated})
}

// roomEvents delivers one ROOM_EVENTS batch (request id 0) of room with the given room_seqs.
func (h *harness) roomEvents(room contract.U128, seqs ...uint64) {
	h.t.Helper()
	b := room.Bytes()
	evs := make([]*qimv1.RoomEvent, len(seqs))
	for i, s := range seqs {
		evs[i] = &qimv1.RoomEvent{RoomSeq: s, SenderUserId: uint64(peer), MessageType: 1, Body: []byte("e"), SentAtMs: int64(s)}
	}
	h.frame(contract.OpRoomEvents, 0, &qimv1.RoomEvents{RoomId: b[:], Events: evs})
}

func (h *harness) roomLeft(room contract.U128, reason contract.RoomLeftReason, id uint32) {
	h.t.Helper()
	b := room.Bytes()
	h.frame(contract.OpRoomLeft, id, &qimv1.RoomLeft{RoomId: b[:], Reason: uint32(reason)})
}

func eventsOf[T Event](evs []Event) []T {
	var out []T
	for _, ev := range evs {
		if e, ok := ev.(T); ok {
			out = append(out, e)
		}
	}
	return out
}

// delivered flattens the room_seqs of the RoomEvents in evs.
func delivered(evs []Event) []uint64 {
	var out []uint64
	for _, re := range eventsOf[RoomEvents](evs) {
		for _, ev := range re.Events {
			out = append(out, ev.RoomSeq)
		}
	}
	return out
}

func seqsEqual(a []uint64, b ...uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func roomIDBytes(room contract.U128) []byte {
	b := room.Bytes()
	return b[:]
}
