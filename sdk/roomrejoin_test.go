package sdk

import (
	"errors"
	"testing"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// After a reconnect the SDK rejoins every room of the set at AUTH_OK with replay_from_room_seq =
// the last delivered + 1, reports RoomJoined{Rejoin} (ReplayTruncated as the server says), and a
// gap when the replay starts later than asked.
func TestRoomRejoinAfterReconnect(t *testing.T) {
	h := newHarness(t)
	h.connect()
	h.roomCall(roomJoinOp, roomA, RoomJoinOptions{})
	h.answerJoin(roomA, 100, false)
	h.roomEvents(roomA, 101, 102, 103)
	h.roomCall(roomJoinOp, roomB, RoomJoinOptions{})
	h.answerJoin(roomB, 7, false) // nothing delivered yet: the join point is the position

	h.reconnect()
	if rs := h.e.rooms.snapshot(); len(rs) != 2 || rs[0].Joined || rs[1].Joined {
		t.Fatalf("Rooms %+v while rejoining, want both listed and not joined", rs)
	}
	_, ja := h.joinSent(roomA)
	_, jb := h.joinSent(roomB)
	if h.joinsSent(roomA) != 2 || h.joinsSent(roomB) != 2 || ja.GetReplayFromRoomSeq() != 104 || jb.GetReplayFromRoomSeq() != 8 {
		t.Fatalf("%d and %d JOIN_ROOMs, the last from %d and %d: want a rejoin each, from 104 and 8",
			h.joinsSent(roomA), h.joinsSent(roomB), ja.GetReplayFromRoomSeq(), jb.GetReplayFromRoomSeq())
	}
	mark := len(h.events)
	h.answerJoin(roomA, 106, false)
	h.roomEvents(roomA, 104, 105, 106)
	h.answerJoin(roomB, 20, true) // the buffer lost 8..11
	h.roomEvents(roomB, 12, 13)
	joined := eventsOf[RoomJoined](h.events[mark:])
	if len(joined) != 2 || !joined[0].Rejoin || joined[0].ReplayTruncated || !joined[1].Rejoin || !joined[1].ReplayTruncated {
		t.Fatalf("RoomJoined after the reconnect %+v, want two rejoins, the second truncated", joined)
	}
	evs := eventsOf[RoomEvents](h.events[mark:])
	if len(evs) != 2 || evs[0].Gap != nil || evs[1].Gap == nil || *evs[1].Gap != (RoomGap{7, 12}) {
		t.Fatalf("RoomEvents after the reconnect %+v, want roomA without a gap and roomB with gap {7 12}", evs)
	}
	if got := delivered(h.events); !seqsEqual(got, 101, 102, 103, 104, 105, 106, 12, 13) {
		t.Fatalf("delivered %v", got)
	}
	if h.stats.roomRejoins.Load() != 2 {
		t.Fatalf("%d rejoins counted, want 2", h.stats.roomRejoins.Load())
	}
}

// The server's ROOM_LEFT: SLOW_CONSUMER and UNAVAILABLE are rejoined at once from the last
// room_seq + 1; REMOVED and ROOM_CLOSED are final (no JOIN_ROOM, the room leaves the set).
func TestRoomLeftByTheServer(t *testing.T) {
	for _, tc := range []struct {
		reason contract.RoomLeftReason
		rejoin bool
	}{
		{contract.RoomLeftSlowConsumer, true},
		{contract.RoomLeftUnavailable, true},
		{contract.RoomLeftRemoved, false},
		{contract.RoomLeftClosed, false},
	} {
		t.Run(tc.reason.String(), func(t *testing.T) {
			h := newHarness(t)
			h.connect()
			h.roomCall(roomJoinOp, roomA, RoomJoinOptions{})
			h.answerJoin(roomA, 50, false)
			h.roomEvents(roomA, 51, 52)
			h.roomLeft(roomA, tc.reason, 0)
			left := eventsOf[RoomLeft](h.events)
			if len(left) != 1 || left[0].Reason != tc.reason || left[0].Rejoining != tc.rejoin || left[0].Err != nil {
				t.Fatalf("RoomLeft %+v, want reason %s rejoining=%v", left, tc.reason, tc.rejoin)
			}
			joins := h.joinsSent(roomA)
			if !tc.rejoin {
				if joins != 1 || len(h.e.rooms.snapshot()) != 0 {
					t.Fatalf("%d JOIN_ROOM, rooms %+v: want no rejoin and the room gone", joins, h.e.rooms.snapshot())
				}
				h.reconnect()
				if h.joinsSent(roomA) != 1 {
					t.Fatal("a room the server removed was rejoined after a reconnect")
				}
				return
			}
			if _, j := h.joinSent(roomA); joins != 2 || j.GetReplayFromRoomSeq() != 53 {
				t.Fatalf("%d JOIN_ROOM, the last from %d: want a rejoin from 53", joins, j.GetReplayFromRoomSeq())
			}
			h.answerJoin(roomA, 54, false)
			h.roomEvents(roomA, 53, 54)
			if got := delivered(h.events); !seqsEqual(got, 51, 52, 53, 54) {
				t.Fatalf("delivered %v, want 51..54", got)
			}
		})
	}
}

// A ROOM_LEFT that overtakes the ROOM_JOINED it ends (the gateway's control queue is faster
// than its room queue) is applied right after that ROOM_JOINED.
func TestRoomLeftOvertakingItsJoin(t *testing.T) {
	h := newHarness(t)
	h.connect()
	join := h.roomCall(roomJoinOp, roomA, RoomJoinOptions{})
	h.roomLeft(roomA, contract.RoomLeftSlowConsumer, 0)
	if n := len(eventsOf[RoomLeft](h.events)); n != 0 || h.joinsSent(roomA) != 1 {
		t.Fatalf("acted on the ROOM_LEFT before its ROOM_JOINED (%d RoomLeft)", n)
	}
	h.answerJoin(roomA, 9, false)
	if r := answer(t, join); r.err != nil {
		t.Fatal(r.err)
	}
	var order []string
	for _, ev := range h.events {
		switch e := ev.(type) {
		case RoomJoined:
			order = append(order, "joined")
		case RoomLeft:
			order = append(order, "left "+e.Reason.String())
		}
	}
	if len(order) != 2 || order[0] != "joined" || order[1] != "left SLOW_CONSUMER" {
		t.Fatalf("events %v, want joined then left SLOW_CONSUMER", order)
	}
	if _, j := h.joinSent(roomA); h.joinsSent(roomA) != 2 || j.GetReplayFromRoomSeq() != 10 {
		t.Fatalf("rejoin from %d, want 10", j.GetReplayFromRoomSeq())
	}
}

// A rejoin refused with a retryable code is retried after the pause; one refused for good takes
// the room out of the set with RoomLeft{Err}, reason REMOVED when the user was banned meanwhile.
func TestRoomRejoinRefusals(t *testing.T) {
	h := newHarness(t)
	h.connect()
	h.roomCall(roomJoinOp, roomA, RoomJoinOptions{})
	h.answerJoin(roomA, 30, false)
	h.roomCall(roomJoinOp, roomB, RoomJoinOptions{})
	h.answerJoin(roomB, 40, false)
	roomC := contract.U128{Lo: 0xc}
	h.roomCall(roomJoinOp, roomC, RoomJoinOptions{})
	h.answerJoin(roomC, 50, false)
	h.reconnect()
	fa, _ := h.joinSent(roomA)
	fb, _ := h.joinSent(roomB)
	fc, _ := h.joinSent(roomC)
	h.frame(contract.OpError, fa.id, &qimv1.ErrorFrame{Code: uint32(contract.ErrCodeUnavailable)})
	h.frame(contract.OpError, fb.id, &qimv1.ErrorFrame{Code: uint32(contract.ErrCodeUnimplemented)})
	// roomC's user was banned meanwhile.
	h.frame(contract.OpError, fc.id, &qimv1.ErrorFrame{Code: uint32(contract.ErrCodeNotMember)})
	h.e.onTick(h.now) // nothing is due yet
	if h.joinsSent(roomA) != 2 {
		t.Fatal("rejoin retried without a pause")
	}
	left := eventsOf[RoomLeft](h.events)
	if len(left) != 2 || left[0].Room != roomB || !errors.Is(left[0].Err, ErrUnimplemented) || left[0].Rejoining ||
		left[0].Reason != contract.RoomLeftUnavailable || left[1].Room != roomC || !errors.Is(left[1].Err, ErrNotMember) ||
		left[1].Reason != contract.RoomLeftRemoved {
		t.Fatalf("RoomLeft %+v, want roomB given up (UNIMPLEMENTED) and roomC removed (NOT_MEMBER)", left)
	}
	due := h.e.nextDeadline(h.now)
	if due.IsZero() || due.Sub(h.now) > sendRetryMax {
		t.Fatalf("next deadline %v from now, want the rejoin retry within %v", due.Sub(h.now), sendRetryMax)
	}
	h.now = due
	h.e.onTick(h.now)
	if _, j := h.joinSent(roomA); h.joinsSent(roomA) != 3 || j.GetReplayFromRoomSeq() != 31 {
		t.Fatalf("%d JOIN_ROOM for roomA, want the retry from 31", h.joinsSent(roomA))
	}
	h.answerJoin(roomA, 31, false)
	if rs := h.e.rooms.snapshot(); len(rs) != 1 || rs[0].Room != roomA || !rs[0].Joined {
		t.Fatalf("Rooms %+v, want roomA joined again", rs)
	}
}
