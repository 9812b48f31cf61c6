package sdk

import (
	"errors"
	"testing"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// A join with a replay: JOIN_ROOM asks from the requested room_seq, and the app sees RoomJoined
// first, then the replayed events, then the live ones, in room_seq order and without a gap.
// Rooms go live at AUTH_OK: the mailbox reconciliation is still running.
func TestRoomJoinReplayThenLive(t *testing.T) {
	h := newHarness(t)
	h.connect()
	join := h.roomCall(roomJoinOp, roomB, RoomJoinOptions{Replay: true, ReplayFrom: 5})
	if _, j := h.joinSent(roomB); j.ReplayFromRoomSeq == nil || j.GetReplayFromRoomSeq() != 5 {
		t.Fatalf("JOIN_ROOM %+v, want replay_from_room_seq 5", j)
	}
	unanswered(t, join)
	h.answerJoin(roomB, 7, false)
	if r := answer(t, join); r.err != nil || r.joined.RoomSeq != 7 || r.joined.Room != roomB || r.joined.Rejoin {
		t.Fatalf("JoinRoom answered %+v", r)
	}
	h.roomEvents(roomB, 5, 6, 7) // the replay
	h.roomEvents(roomB, 8)       // live
	h.roomEvents(roomB, 9, 10)
	joinedAt, firstEvents := -1, -1
	for i, ev := range h.events {
		switch ev.(type) {
		case RoomJoined:
			joinedAt = i
		case RoomEvents:
			if firstEvents < 0 {
				firstEvents = i
			}
		}
	}
	if joinedAt < 0 || firstEvents < joinedAt {
		t.Fatalf("RoomJoined at %d, first RoomEvents at %d: the join must be reported first", joinedAt, firstEvents)
	}
	if got := delivered(h.events); !seqsEqual(got, 5, 6, 7, 8, 9, 10) {
		t.Fatalf("delivered %v, want 5..10 in order", got)
	}
	for _, re := range eventsOf[RoomEvents](h.events) {
		if re.Gap != nil || re.Room != roomB {
			t.Fatalf("RoomEvents %+v: want room %s and no gap", re, roomB)
		}
	}
	if rs := h.e.rooms.snapshot(); len(rs) != 1 || rs[0].Room != roomB || rs[0].RoomSeq != 10 || !rs[0].Joined {
		t.Fatalf("Rooms %+v, want roomB joined at 10", rs)
	}
}

// room_seq jumps are reported as gaps: between batches, inside one batch (split into two
// RoomEvents), and after a replay that starts later than asked; events already delivered are
// not delivered again.
func TestRoomGapReported(t *testing.T) {
	h := newHarness(t)
	h.connect()
	h.roomCall(roomJoinOp, roomA, RoomJoinOptions{}) // live only: the join point is the position
	h.answerJoin(roomA, 10, false)
	mark := len(h.events)
	h.roomEvents(roomA, 11, 12)
	h.roomEvents(roomA, 15, 16)
	h.roomEvents(roomA, 16, 17, 20) // 16 again: already delivered
	got := eventsOf[RoomEvents](h.events[mark:])
	want := []struct {
		seqs []uint64
		gap  *RoomGap
	}{{[]uint64{11, 12}, nil}, {[]uint64{15, 16}, &RoomGap{12, 15}}, {[]uint64{17}, nil}, {[]uint64{20}, &RoomGap{17, 20}}}
	if len(got) != len(want) {
		t.Fatalf("%d RoomEvents %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		var seqs []uint64
		for _, ev := range got[i].Events {
			seqs = append(seqs, ev.RoomSeq)
		}
		if !seqsEqual(seqs, w.seqs...) || (got[i].Gap == nil) != (w.gap == nil) || (w.gap != nil && *got[i].Gap != *w.gap) {
			t.Fatalf("RoomEvents %d: %v gap %+v, want %v gap %+v", i, seqs, got[i].Gap, w.seqs, w.gap)
		}
	}
	if g := (RoomGap{12, 15}); g.Lost() != 2 {
		t.Fatalf("Lost() = %d, want 2", g.Lost())
	}

	h.roomCall(roomJoinOp, roomB, RoomJoinOptions{Replay: true, ReplayFrom: 100})
	h.answerJoin(roomB, 130, true) // the buffer starts at 120 now
	h.roomEvents(roomB, 120, 121)
	last := eventsOf[RoomEvents](h.events)
	if g := last[len(last)-1].Gap; g == nil || *g != (RoomGap{99, 120}) {
		t.Fatalf("replay starting at 120 instead of 100: gap %+v, want {99 120}", g)
	}
	if j := eventsOf[RoomJoined](h.events); !j[len(j)-1].ReplayTruncated {
		t.Fatal("ReplayTruncated lost")
	}
}

// Events are delivered only while a membership is live: not for a room never joined, not
// before ROOM_JOINED, not after a ROOM_LEFT overtook them, not while the app's leave is in flight.
func TestRoomEventsOfRoomsNotJoinedAreDropped(t *testing.T) {
	h := newHarness(t)
	h.connect()
	h.roomEvents(roomA, 1, 2) // never joined
	h.roomCall(roomJoinOp, roomA, RoomJoinOptions{})
	h.roomEvents(roomA, 3) // before ROOM_JOINED
	h.answerJoin(roomA, 3, false)
	h.roomEvents(roomA, 4)
	h.roomLeft(roomA, contract.RoomLeftRemoved, 0)
	h.roomEvents(roomA, 5, 6) // overtaken by the ROOM_LEFT
	h.roomCall(roomJoinOp, roomB, RoomJoinOptions{})
	h.answerJoin(roomB, 1, false)
	leave := h.roomCall(roomLeaveOp, roomB, RoomJoinOptions{})
	h.roomEvents(roomB, 2) // while LEAVE_ROOM is in flight
	h.frame(contract.OpRoomLeft, h.lastSent(contract.OpLeaveRoom).id, &qimv1.RoomLeft{RoomId: roomIDBytes(roomB)})
	h.roomEvents(roomB, 3)
	if got := delivered(h.events); !seqsEqual(got, 4) {
		t.Fatalf("delivered %v, want only 4", got)
	}
	if d := h.stats.roomDropped.Load(); d != 7 {
		t.Fatalf("%d events counted dropped, want 7", d)
	}
	if r := answer(t, leave); r.err != nil {
		t.Fatalf("LeaveRoom: %v", r.err)
	}
	left := eventsOf[RoomLeft](h.events)
	if len(left) != 2 || left[0].Reason != contract.RoomLeftRemoved || left[1].Reason != contract.RoomLeftRequested ||
		left[1].Room != roomB {
		t.Fatalf("RoomLeft events %+v, want REMOVED then REQUESTED", left)
	}
	if rs := h.e.rooms.snapshot(); len(rs) != 0 {
		t.Fatalf("Rooms %+v after both left, want none", rs)
	}
}

// App join refusals return to the caller and leave no trace; the limit is checked locally too.
func TestRoomJoinRefusals(t *testing.T) {
	h := newHarness(t)
	if r := answer(t, h.roomCall(roomJoinOp, roomA, RoomJoinOptions{})); !errors.Is(r.err, ErrOffline) {
		t.Fatalf("before connecting: %v, want ErrOffline", r.err)
	}
	h.connect()
	join := h.roomCall(roomJoinOp, roomA, RoomJoinOptions{})
	if r := answer(t, h.roomCall(roomJoinOp, roomA, RoomJoinOptions{})); !errors.Is(r.err, ErrRoomJoined) {
		t.Fatalf("second join of a joining room: %v, want ErrRoomJoined", r.err)
	}
	f, _ := h.joinSent(roomA)
	h.frame(contract.OpError, f.id, &qimv1.ErrorFrame{Code: uint32(contract.ErrCodeRateLimited)})
	var se *ServerError
	if r := answer(t, join); !errors.Is(r.err, ErrTooManyRooms) || !errors.As(r.err, &se) || !se.Retryable() {
		t.Fatalf("RATE_LIMITED: %v, want a retryable *ServerError matching ErrTooManyRooms", r.err)
	}
	for i := range contract.MaxJoinedRoomsPerConnection {
		h.roomCall(roomJoinOp, contract.U128{Lo: uint64(100 + i)}, RoomJoinOptions{})
	}
	if r := answer(t, h.roomCall(roomJoinOp, roomA, RoomJoinOptions{})); !errors.Is(r.err, ErrTooManyRooms) {
		t.Fatalf("join past the limit: %v, want ErrTooManyRooms", r.err)
	}
	if n := h.joinsSent(roomA); n != 1 {
		t.Fatalf("%d JOIN_ROOM for roomA, want 1 (refusals are local)", n)
	}
	if len(eventsOf[RoomLeft](h.events)) != 0 || len(eventsOf[RoomJoined](h.events)) != 0 {
		t.Fatal("a refused join produced room events")
	}
}

// Leaving while the join is unanswered: the join request is forgotten (the server never answers
// it), the JoinRoom call fails, and LEAVE_ROOM's answer takes the room out of the set.
func TestRoomLeaveWhileJoining(t *testing.T) {
	h := newHarness(t)
	h.connect()
	join := h.roomCall(roomJoinOp, roomA, RoomJoinOptions{})
	f, _ := h.joinSent(roomA)
	leave := h.roomCall(roomLeaveOp, roomA, RoomJoinOptions{})
	if r := answer(t, join); r.err == nil {
		t.Fatal("JoinRoom succeeded although the app left first")
	}
	if _, waiting := h.e.reqs[f.id]; waiting {
		t.Fatal("the abandoned JOIN_ROOM still waits for an answer")
	}
	h.frame(contract.OpRoomJoined, f.id, &qimv1.RoomJoined{RoomId: roomIDBytes(roomA), RoomSeq: 4}) // raced the leave
	h.roomEvents(roomA, 5)
	unanswered(t, leave)
	h.frame(contract.OpRoomLeft, h.lastSent(contract.OpLeaveRoom).id, &qimv1.RoomLeft{RoomId: roomIDBytes(roomA)})
	if r := answer(t, leave); r.err != nil || len(delivered(h.events)) != 0 || len(h.e.rooms.snapshot()) != 0 {
		t.Fatalf("leave %v, delivered %v, rooms %+v", r.err, delivered(h.events), h.e.rooms.snapshot())
	}
}

// An app that does not read its events has room events shed, not queued without bound: the
// next batch it gets reports the gap, and a rejoin replays from the last event it got.
func TestRoomEventsShedWhileTheAppDoesNotRead(t *testing.T) {
	h := newHarness(t)
	h.connect()
	h.roomCall(roomJoinOp, roomA, RoomJoinOptions{})
	h.answerJoin(roomA, 0, false)
	h.roomEvents(roomA, 1, 2, 3)
	backlog := 0
	h.e.backlog = func() int { return backlog }
	backlog = h.e.cfg.EventBacklogPause + 1
	h.roomEvents(roomA, 4, 5)
	if rs := h.e.rooms.snapshot(); rs[0].RoomSeq != 3 || h.stats.roomShed.Load() != 2 {
		t.Fatalf("Rooms %+v, %d shed: want the position kept at 3 and 2 events shed", rs, h.stats.roomShed.Load())
	}
	backlog = 0
	h.roomEvents(roomA, 6)
	evs := eventsOf[RoomEvents](h.events)
	if got := delivered(h.events); !seqsEqual(got, 1, 2, 3, 6) || evs[len(evs)-1].Gap == nil || *evs[len(evs)-1].Gap != (RoomGap{3, 6}) {
		t.Fatalf("delivered %v, last gap %+v: want 1 2 3 6 with gap {3 6}", got, evs[len(evs)-1].Gap)
	}
}
