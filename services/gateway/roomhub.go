package gateway

// This file is the gateway's side of rooms (ADR-0034): which local connections are joined to
// which room, and the delivery of a RoomWriter's broadcasts to them.
//
// Invariants: a connection receives a room's ROOM_EVENTS only after its ROOM_JOINED and the
// replay, and in room_seq order, because the join answer and the broadcasts arrive on one
// ordered link and are applied under mu into the connection's one FIFO room queue; every
// membership a RoomWriter granted is left exactly once (LEAVE_ROOM, slow consumer, closed
// connection), and only on the link generation that granted it, so a leave can never cancel a
// membership granted on a newer link; a connection whose room queue is full is dropped from the
// room (ROOM_LEFT SLOW_CONSUMER) instead of being buffered for without bound.
//
// Rejected: a goroutine or a gRPC stream per joined connection. A room of 10,000 members would
// cost 10,000 streams; here it costs one link per RoomWriter and one queue push per member.

import (
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// roomKey names a room within the gateway.
type roomKey struct {
	tenant contract.TenantID
	room   contract.ConversationID
}

// roomSub is one connection's membership in one room.
type roomSub struct {
	c         *conn
	key       roomKey
	roomID    []byte // as the client sent it, echoed in frames
	user      contract.UserID
	link      *roomLink
	gen       uint64 // link generation the join was sent on
	callID    uint64
	requestID uint32 // the JOIN_ROOM's, until answered
	live      bool   // joined: events flow
}

// outFrame is a downlink frame queued for the connection's pump.
type outFrame struct {
	op        contract.Opcode
	requestID uint32
	payload   []byte
}

// roomHub holds the gateway's room memberships.
type roomHub struct {
	m *metrics

	mu      sync.Mutex
	rooms   map[roomKey]map[*conn]*roomSub
	byConn  map[*conn]map[roomKey]*roomSub
	pending map[uint64]*roomSub // joins sent, by call id
	nextID  uint64
}

func newRoomHub(m *metrics) *roomHub {
	return &roomHub{m: m, rooms: map[roomKey]map[*conn]*roomSub{}, byConn: map[*conn]map[roomKey]*roomSub{},
		pending: map[uint64]*roomSub{}}
}

// add registers a pending join and returns its call id, or the refusal code: the connection is
// already joined (or joining) the room, or at its room limit.
func (h *roomHub) add(sub *roomSub) (contract.ErrorCode, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	mine := h.byConn[sub.c]
	if mine[sub.key] != nil {
		return contract.ErrCodeInvalidArgument, "already joined to this room: LEAVE_ROOM first"
	}
	if len(mine) >= contract.MaxJoinedRoomsPerConnection {
		return contract.ErrCodeRateLimited, "joined to the most rooms one connection may hold"
	}
	if mine == nil {
		mine = map[roomKey]*roomSub{}
		h.byConn[sub.c] = mine
	}
	mine[sub.key] = sub
	if h.rooms[sub.key] == nil {
		h.rooms[sub.key] = map[*conn]*roomSub{}
	}
	h.rooms[sub.key][sub.c] = sub
	h.nextID++
	sub.callID = h.nextID
	h.pending[sub.callID] = sub
	return contract.ErrCodeUnspecified, ""
}

// removeLocked forgets sub's membership; it reports false when sub was already gone (someone
// else answered for it). A pending join stays in pending until its answer or its link's loss.
func (h *roomHub) removeLocked(sub *roomSub) bool {
	if h.rooms[sub.key][sub.c] != sub {
		return false
	}
	delete(h.rooms[sub.key], sub.c)
	if len(h.rooms[sub.key]) == 0 {
		delete(h.rooms, sub.key)
	}
	delete(h.byConn[sub.c], sub.key)
	if len(h.byConn[sub.c]) == 0 {
		delete(h.byConn, sub.c)
	}
	return true
}

// abandon forgets a join that could not be sent.
func (h *roomHub) abandon(sub *roomSub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.pending, sub.callID)
	h.removeLocked(sub)
}

// leave ends c's membership in key (LEAVE_ROOM). A live membership is left at the RoomWriter;
// a pending one is forgotten, and its answer, when it comes, is left there (see answered).
func (h *roomHub) leave(c *conn, key roomKey) {
	h.mu.Lock()
	defer h.mu.Unlock()
	sub := h.byConn[c][key]
	if sub == nil || !h.removeLocked(sub) {
		return
	}
	if sub.live {
		sub.link.leave(sub)
	}
}

// dropConn ends every membership of a closing connection.
func (h *roomHub) dropConn(c *conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, sub := range h.byConn[c] {
		if h.removeLocked(sub) && sub.live {
			sub.link.leave(sub)
		}
	}
}

// answered applies a RoomWriter's join answer: ROOM_JOINED and the replay go into the
// connection's room queue and the membership turns live, all under mu, so no broadcast of the
// room can slip in between. A success whose membership is already gone is left at once.
func (h *roomHub) answered(l *roomLink, gen uint64, a *internalv1.RoomJoinAnswer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	sub := h.pending[a.GetCallId()]
	if sub == nil || sub.link != l || sub.gen != gen {
		return // not ours: pending joins of a lost link were failed with it
	}
	delete(h.pending, sub.callID)
	current := h.rooms[sub.key][sub.c] == sub
	if code := contract.ErrorCode(a.GetErrorCode()); code != 0 {
		h.m.roomJoins.WithLabelValues("refused").Inc()
		if current {
			h.removeLocked(sub)
			sub.c.queueError(sub.requestID, contract.OpJoinRoom, code, a.GetErrorMessage())
		}
		return
	}
	if !current {
		l.leave(sub)
		return
	}
	sub.live = true
	h.m.roomJoins.WithLabelValues("joined").Inc()
	payload, err := proto.Marshal(a.GetJoined())
	ok := err == nil && sub.c.offerJoin(outFrame{op: contract.OpRoomJoined, requestID: sub.requestID, payload: payload})
	for _, p := range roomEventFrames(sub.roomID, a.GetReplay()) {
		ok = ok && sub.c.offerJoin(outFrame{op: contract.OpRoomEvents, payload: p})
	}
	if !ok {
		h.slowLocked(sub)
	}
}

// broadcast delivers a RoomWriter's events to every live member of the room. The frames are
// encoded once and shared by every member's queue.
func (h *roomHub) broadcast(l *roomLink, b *internalv1.RoomBroadcast) {
	key, ok := wireRoomKey(b.GetTenantId(), b.GetRoomId())
	if !ok {
		return
	}
	// Each member gets the room id as it spelled it (the kind bits are the server's): encoded
	// once per spelling, which is one per room in practice.
	bySpelling := map[string][][]byte{}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, sub := range h.rooms[key] {
		if !sub.live || sub.link != l {
			continue
		}
		frames, ok := bySpelling[string(sub.roomID)]
		if !ok {
			frames = roomEventFrames(sub.roomID, b.GetEvents())
			bySpelling[string(sub.roomID)] = frames
		}
		for _, p := range frames {
			if !sub.c.offerRoom(outFrame{op: contract.OpRoomEvents, payload: p}) {
				h.slowLocked(sub)
				break
			}
		}
		h.m.roomFrames.Add(float64(len(frames)))
	}
}

// removed ends the memberships a RoomWriter removed (a kick or a ban) of one user on this link:
// ROOM_LEFT with the reason, and no leave (the RoomWriter already dropped them).
func (h *roomHub) removed(l *roomLink, gen uint64, rm *internalv1.RoomRemoval) {
	key, ok := wireRoomKey(rm.GetTenantId(), rm.GetRoomId())
	if !ok {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, sub := range h.rooms[key] {
		if sub.live && sub.link == l && sub.gen == gen && uint64(sub.user) == rm.GetUserId() && h.removeLocked(sub) {
			h.m.roomLeft.WithLabelValues("removed").Inc()
			sub.c.queueRoomLeft(sub.roomID, contract.RoomLeftReason(rm.GetReason()))
		}
	}
}

// slowLocked drops a member whose room queue is full: ROOM_LEFT SLOW_CONSUMER (on the control
// queue, which may overtake events already queued: clients ignore events of rooms they left)
// and a leave at the RoomWriter.
func (h *roomHub) slowLocked(sub *roomSub) {
	if !h.removeLocked(sub) {
		return
	}
	h.m.roomLeft.WithLabelValues("slow_consumer").Inc()
	sub.link.leave(sub)
	sub.c.queueRoomLeft(sub.roomID, contract.RoomLeftSlowConsumer)
}

// linkLost ends every membership and fails every pending join of a lost link generation: the
// RoomWriter's buffer and its memberships are gone with it (or will be when it notices), so
// each connection learns ROOM_LEFT UNAVAILABLE and rejoins.
func (h *roomHub) linkLost(l *roomLink, gen uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, sub := range h.pending {
		if sub.link == l && sub.gen == gen {
			delete(h.pending, id)
			if h.removeLocked(sub) {
				sub.c.queueError(sub.requestID, contract.OpJoinRoom, contract.ErrCodeUnavailable, "the room's server was lost; retry")
			}
		}
	}
	for _, subs := range h.rooms {
		for _, sub := range subs {
			if sub.link == l && sub.gen == gen && sub.live && h.removeLocked(sub) {
				h.m.roomLeft.WithLabelValues("unavailable").Inc()
				sub.c.queueRoomLeft(sub.roomID, contract.RoomLeftUnavailable)
			}
		}
	}
}

// roomEventFrames encodes events as ROOM_EVENTS payloads of at most contract.RoomEventsBatchMax
// events and the wire's payload limit each.
func roomEventFrames(roomID []byte, events []*qimv1.RoomEvent) [][]byte {
	var out [][]byte
	for len(events) > 0 {
		n := min(len(events), contract.RoomEventsBatchMax)
		p, err := proto.Marshal(&qimv1.RoomEvents{RoomId: roomID, Events: events[:n]})
		for err == nil && len(p) > contract.MaxFramePayload && n > 1 {
			n /= 2
			p, err = proto.Marshal(&qimv1.RoomEvents{RoomId: roomID, Events: events[:n]})
		}
		if err == nil && len(p) <= contract.MaxFramePayload {
			out = append(out, p)
		}
		events = events[n:]
	}
	return out
}
