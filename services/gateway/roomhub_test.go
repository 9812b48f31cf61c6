package gateway

import (
	"bytes"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// roomFixture is a hub with one open link and connections whose pumps do not run, so their
// queues hold exactly what the hub put there.
type roomFixture struct {
	t    *testing.T
	svc  *Service
	hub  *roomHub
	link *roomLink
	gen  uint64
	key  roomKey
	room []byte
}

func newRoomFixture(t *testing.T, queueBytes int) *roomFixture {
	t.Helper()
	cfg := validConfig()
	cfg.RoomQueueBytes = queueBytes
	svc, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	hub := newRoomHub(svc.m)
	link := newRoomLink("room-1", nil, hub, "gw", svc.m, svc.log)
	room := bytes.Repeat([]byte{7}, 16)
	conv, err := contract.RoomConversationID(contract.U128{Lo: 0x0707070707070707, Hi: 0x0707070707070707})
	if err != nil {
		t.Fatal(err)
	}
	f := &roomFixture{t: t, svc: svc, hub: hub, link: link, room: room, key: roomKey{tenant: contract.TenantID{Lo: 1}, room: conv}}
	f.gen = link.open()
	return f
}

func (f *roomFixture) conn() *conn {
	return &conn{s: f.svc, roomQ: make(chan outFrame, roomQueueFrames), ctrlQ: make(chan outFrame, ctrlQueueDepth)}
}

// join registers and sends a join for c and returns its membership.
func (f *roomFixture) join(c *conn, requestID uint32) *roomSub {
	f.t.Helper()
	sub := &roomSub{c: c, key: f.key, roomID: f.room, link: f.link, user: 9, requestID: requestID}
	if code, msg := f.hub.add(sub); code != contract.ErrCodeUnspecified {
		f.t.Fatalf("add: %s %s", code, msg)
	}
	if err := f.link.join(sub, nil); err != nil {
		f.t.Fatal(err)
	}
	return sub
}

func (f *roomFixture) answer(sub *roomSub, latest uint64, replay ...uint64) {
	f.hub.answered(f.link, f.gen, &internalv1.RoomJoinAnswer{CallId: sub.callID,
		Joined: &qimv1.RoomJoined{RoomId: f.room, RoomSeq: latest}, Replay: events(replay...)})
}

func (f *roomFixture) broadcast(seqs ...uint64) {
	tenant := f.key.tenant.Bytes()
	f.hub.broadcast(f.link, &internalv1.RoomBroadcast{TenantId: tenant[:], RoomId: f.room, Events: events(seqs...)})
}

func events(seqs ...uint64) []*qimv1.RoomEvent {
	var out []*qimv1.RoomEvent
	for _, s := range seqs {
		out = append(out, &qimv1.RoomEvent{RoomSeq: s, SenderUserId: 3, MessageType: 1, Body: []byte("x")})
	}
	return out
}

// drain lists what a queue holds: opcode and, for ROOM_EVENTS, the room_seq values. It takes
// the frames out as the pump does, room bytes included.
func drain(t *testing.T, c *conn, q chan outFrame) []string {
	t.Helper()
	var out []string
	for {
		select {
		case f := <-q:
			if q == c.roomQ {
				c.roomBytes.Add(-int64(len(f.payload)))
			}
			out = append(out, describeFrame(t, f))
		default:
			return out
		}
	}
}

func describeFrame(t *testing.T, f outFrame) string {
	switch f.op {
	case contract.OpRoomEvents:
		var evs qimv1.RoomEvents
		if err := proto.Unmarshal(f.payload, &evs); err != nil {
			t.Fatal(err)
		}
		s := "EVENTS"
		for _, e := range evs.GetEvents() {
			s += " " + string(rune('0'+e.GetRoomSeq()))
		}
		return s
	case contract.OpRoomLeft:
		var left qimv1.RoomLeft
		if err := proto.Unmarshal(f.payload, &left); err != nil {
			t.Fatal(err)
		}
		return "LEFT " + contract.RoomLeftReason(left.GetReason()).String()
	}
	return f.op.String()
}

func queuedOps(l *roomLink) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, up := range l.queue {
		switch up.GetOp().(type) {
		case *internalv1.RoomLinkUp_Join:
			out = append(out, "join")
		case *internalv1.RoomLinkUp_Leave:
			out = append(out, "leave")
		}
	}
	return out
}

// A member sees nothing of the room before its ROOM_JOINED, then the replay, then live events:
// a broadcast that reaches the gateway while the join is unanswered is not the member's.
func TestRoomJoinedThenReplayThenLive(t *testing.T) {
	f := newRoomFixture(t, 1<<20)
	c := f.conn()
	sub := f.join(c, 41)
	f.broadcast(4) // the room's traffic before the RoomWriter processed this join
	f.answer(sub, 5, 4, 5)
	f.broadcast(6)
	got := drain(t, c, c.roomQ)
	want := []string{"ROOM_JOINED", "EVENTS 4 5", "EVENTS 6"}
	if !slices.Equal(got, want) {
		t.Fatalf("room queue %v, want %v", got, want)
	}
}

// A member whose queue overflows is dropped from the room: ROOM_LEFT SLOW_CONSUMER on the
// control queue, a leave at the RoomWriter, and nothing more of the room.
func TestRoomSlowConsumerDropped(t *testing.T) {
	f := newRoomFixture(t, 64<<10)
	slow, other := f.conn(), f.conn()
	s1, s2 := f.join(slow, 1), f.join(other, 2)
	f.answer(s1, 0)
	f.answer(s2, 0)
	big := &internalv1.RoomBroadcast{RoomId: f.room, Events: []*qimv1.RoomEvent{{RoomSeq: 1, Body: make([]byte, 40<<10)}}}
	tenant := f.key.tenant.Bytes()
	big.TenantId = tenant[:]
	f.hub.broadcast(f.link, big)
	drain(t, other, other.roomQ) // the other member reads
	f.hub.broadcast(f.link, big)
	if got := drain(t, slow, slow.ctrlQ); !slices.Equal(got, []string{"LEFT SLOW_CONSUMER"}) {
		t.Fatalf("slow member's control queue %v", got)
	}
	if got := queuedOps(f.link); !slices.Equal(got, []string{"join", "join", "leave"}) {
		t.Fatalf("link queue %v, want the slow member's leave after the joins", got)
	}
	f.broadcast(3)
	if got := drain(t, slow, slow.roomQ); len(got) != 2 { // ROOM_JOINED and the first big event only
		t.Fatalf("slow member's room queue %v", got)
	}
	if got := drain(t, other, other.roomQ); len(got) != 2 {
		t.Fatalf("other member missed events after the drop: %v", got)
	}
	if n := testutil.ToFloat64(f.svc.m.roomLeft.WithLabelValues("slow_consumer")); n != 1 {
		t.Fatalf("slow_consumer drops counted %v", n)
	}
}

// A lost link ends its members (ROOM_LEFT UNAVAILABLE) and fails its pending joins; a leave of
// a membership of the ended generation is never sent on the next one.
func TestRoomLinkLostEndsMembersAndFencesLeaves(t *testing.T) {
	f := newRoomFixture(t, 1<<20)
	live, waiting := f.conn(), f.conn()
	sub := f.join(live, 1)
	f.answer(sub, 0)
	f.join(waiting, 2)
	f.link.close(f.gen)
	if got := drain(t, live, live.ctrlQ); !slices.Equal(got, []string{"LEFT UNAVAILABLE"}) {
		t.Fatalf("live member: %v", got)
	}
	if got := drain(t, waiting, waiting.ctrlQ); !slices.Equal(got, []string{"ERROR"}) {
		t.Fatalf("pending join: %v", got)
	}
	f.gen = f.link.open()
	f.link.leave(sub)
	f.hub.dropConn(live)
	if got := queuedOps(f.link); len(got) != 0 {
		t.Fatalf("the new generation got %v for memberships of the old one", got)
	}
}

// A join left before its answer is left at the RoomWriter when the answer comes, and the
// connection sees nothing of it.
func TestRoomJoinLeftBeforeAnswer(t *testing.T) {
	f := newRoomFixture(t, 1<<20)
	c := f.conn()
	sub := f.join(c, 1)
	f.hub.leave(c, f.key)
	f.answer(sub, 3, 3)
	if got := drain(t, c, c.roomQ); len(got) != 0 {
		t.Fatalf("left connection got %v", got)
	}
	if got := queuedOps(f.link); !slices.Equal(got, []string{"join", "leave"}) {
		t.Fatalf("link queue %v, want join then leave", got)
	}
}

func TestRoomJoinLimits(t *testing.T) {
	f := newRoomFixture(t, 1<<20)
	c := f.conn()
	f.join(c, 1)
	if code, _ := f.hub.add(&roomSub{c: c, key: f.key, roomID: f.room, link: f.link}); code != contract.ErrCodeInvalidArgument {
		t.Fatalf("second join of one room: %s", code)
	}
	for i := 1; i < contract.MaxJoinedRoomsPerConnection; i++ {
		k := f.key
		k.room.Lo += uint64(i)
		if code, _ := f.hub.add(&roomSub{c: c, key: k, link: f.link}); code != contract.ErrCodeUnspecified {
			t.Fatalf("room %d: %s", i, code)
		}
	}
	k := f.key
	k.room.Lo += 1000
	if code, _ := f.hub.add(&roomSub{c: c, key: k, link: f.link}); code != contract.ErrCodeRateLimited {
		t.Fatalf("join past the limit: %s", code)
	}
}

// A removal (kick or ban) ends the user's live memberships on the link with ROOM_LEFT REMOVED
// and sends no leave; other users and other links' memberships stay.
func TestRoomRemovalEndsOnlyThatUser(t *testing.T) {
	f := newRoomFixture(t, 1<<20)
	kicked, other := f.conn(), f.conn()
	s1 := f.join(kicked, 1)
	s2 := f.join(other, 2)
	s2.user = 10
	f.answer(s1, 0)
	f.answer(s2, 0)
	drain(t, kicked, kicked.roomQ)
	tenant := f.key.tenant.Bytes()
	f.hub.removed(f.link, f.gen, &internalv1.RoomRemoval{TenantId: tenant[:], RoomId: f.room, UserId: 9,
		Reason: uint32(contract.RoomLeftRemoved)})
	if got := drain(t, kicked, kicked.ctrlQ); !slices.Equal(got, []string{"LEFT REMOVED"}) {
		t.Fatalf("kicked member: %v", got)
	}
	if got := queuedOps(f.link); !slices.Equal(got, []string{"join", "join"}) {
		t.Fatalf("link queue %v: a removal must not be left again", got)
	}
	f.broadcast(1)
	if got := drain(t, kicked, kicked.roomQ); len(got) != 0 {
		t.Fatalf("kicked member still got %v", got)
	}
	if got := drain(t, other, other.roomQ); !slices.Equal(got, []string{"ROOM_JOINED", "EVENTS 1"}) {
		t.Fatalf("other member: %v", got)
	}
}
