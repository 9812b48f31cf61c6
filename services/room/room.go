package room

import (
	"bytes"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/rpc"
)

// roomKey identifies a room: its tenant and its canonical conversation id (the wire room id with
// its top 4 bits set to the ROOM kind, so every spelling of one room is one key).
type roomKey struct {
	tenant contract.TenantID
	conv   contract.ConversationID
}

// tally is the process-wide count behind the joined-connection and member gauges.
type tally struct {
	joined  atomic.Int64 // joined connections over every room
	members atomic.Int64 // (room, user) pairs with at least one joined connection
}

// membership is one link's joined connections in a room, per user.
type membership struct {
	conns int
	users map[uint64]int
}

// room is one live room in this process.
//
// Invariants (under mu): seq is the latest issued room_seq, base before the first event, and
// every event appended to the ring is broadcast, in the same critical section, to every link in
// links; a join's answer is enqueued in a critical section too. Since a link's queue is FIFO, a
// link receives a room's join answers and events in room_seq order: everything after an answer
// is above its room_seq. links holds exactly the links with a joined connection, and users the
// same connections counted per user. A dead room (dropped by the sweep) is never written again.
//
// How: one mutex per room, held for a publish's validation, append and fan-out to the links
// (one queue push per link, never per member), and for a join's replay and answer.
//
// Rejected: a goroutine per room fed by a channel. It orders as well, but costs a goroutine and
// a channel per idle room and a hop per event, and a join would have to wait for the room's
// goroutine to compute its replay anyway.
type room struct {
	key      roomKey
	tenantID []byte // the tenant's 16 wire bytes, carried by every broadcast
	roomID   []byte // the canonical room id (the conversation id's bytes), carried by broadcasts
	tally    *tally

	mu    sync.Mutex
	dead  bool
	seq   uint64    // contract.RoomSeqBase(instantiation second) until the first event
	last  time.Time // newest event's append time, or the instantiation's
	ring  *ring
	links map[*link]*membership
	users map[uint64]int
	mod   moderation
	// loaded: mod holds the stored moderation (Service.withRoom loads it before the room's
	// first decision; until then the room decides nothing).
	loaded bool
}

func newRoom(key roomKey, now time.Time, events int, age time.Duration, t *tally) *room {
	tb, cb := key.tenant.Bytes(), key.conv.Bytes()
	return &room{key: key, tenantID: tb[:], roomID: cb[:], tally: t, seq: contract.RoomSeqBase(now.Unix()), last: now,
		ring: newRing(events, age), links: map[*link]*membership{}, users: map[uint64]int{},
		mod: moderation{bans: map[uint64]time.Time{}, mutes: map[uint64]time.Time{}, lastPost: map[uint64]time.Time{}}}
}

// publishReq is a validated publish (publish.go).
type publishReq struct {
	key         roomKey
	sender      uint64
	cmid        contract.ClientMessageID
	messageType uint32
	customType  string
	body        []byte
	// sent is the body as the client sent it when the moderation hook rewrote body (nil
	// otherwise): a retry is recognised by what the client sent, not by the rewrite.
	sent []byte
}

// asSent is the body the client sent.
func (p *publishReq) asSent() []byte {
	if p.sent != nil {
		return p.sent
	}
	return p.body
}

// same reports whether prev carries p's content as the client sent it: a retry, not a reuse of
// the key.
func (p *publishReq) same(prev *bufferedEvent) bool {
	body := prev.ev.GetBody()
	if prev.sent != nil {
		body = prev.sent
	}
	return prev.ev.GetMessageType() == p.messageType && prev.ev.GetCustomType() == p.customType && bytes.Equal(body, p.asSent())
}

// publish puts p into the room at now and queues it on every link with joined connections; a
// retry still in the buffer answers its first event (dup true) and queues nothing; moderation
// may refuse it (wait: when slow mode or the rate limit would take it). r.mu is held.
func (r *room) publish(p *publishReq, now time.Time) (ev *qimv1.RoomEvent, dup bool, wait time.Duration, err error) {
	if prev, ok := r.ring.lookup(idemKey{p.sender, p.cmid}, now); ok {
		if !p.same(prev) {
			return nil, false, 0, rpc.Refuse(contract.ErrCodeConflict,
				"client_message_id was already used in this room with other content")
		}
		return prev.ev, true, 0, nil
	}
	if wait, err := r.mod.admitPublish(p.sender, now); err != nil {
		return nil, false, wait, err
	}
	r.seq++
	ev = &qimv1.RoomEvent{RoomSeq: r.seq, SenderUserId: p.sender, MessageType: p.messageType,
		CustomType: p.customType, Body: p.body, SentAtMs: now.UnixMilli()}
	size := proto.Size(ev)
	r.ring.push(bufferedEvent{ev: ev, cmid: p.cmid, at: now, size: size, sent: p.sent}, now)
	r.last = now
	for l := range r.links {
		l.push(linkItem{room: r, ev: ev, size: size + itemOverhead})
	}
	return ev, false, 0, nil
}

// join registers one joined connection of c.user_id on l and enqueues its answer on l, both
// under r.mu (the ordering invariant). Unset replay_from_room_seq asks for live events only. It
// reports false when l has ended: nothing is registered and the answer goes nowhere.
func (r *room) join(l *link, c *internalv1.RoomJoinCall, now time.Time) (truncated, admitted bool) {
	var replay []*qimv1.RoomEvent
	if c.ReplayFromRoomSeq != nil {
		replay, truncated = r.ring.replay(c.GetReplayFromRoomSeq(), r.seq, contract.RoomReplayMaxBytes, now)
	}
	ans := &internalv1.RoomJoinAnswer{CallId: c.GetCallId(), Replay: replay,
		Joined: &qimv1.RoomJoined{RoomId: c.GetRoomId(), RoomSeq: r.seq, ReplayTruncated: truncated}}
	if !l.admit(r, answerItem(ans)) {
		return truncated, false
	}
	m := r.links[l]
	if m == nil {
		m = &membership{users: map[uint64]int{}}
		r.links[l] = m
	}
	user := c.GetUserId()
	m.conns++
	m.users[user]++
	if r.users[user]++; r.users[user] == 1 {
		r.tally.members.Add(1)
	}
	r.tally.joined.Add(1)
	return truncated, true
}

// leave ends one joined connection of user on l; false when there is none to end.
func (r *room) leave(l *link, user uint64) bool {
	m := r.links[l]
	if m == nil || m.users[user] == 0 {
		return false
	}
	if m.users[user]--; m.users[user] == 0 {
		delete(m.users, user)
	}
	if m.conns--; m.conns == 0 {
		delete(r.links, l)
		l.forget(r)
	}
	r.dropUser(user, 1)
	r.tally.joined.Add(-1)
	return true
}

// dropLink ends every joined connection of l in the room (the link ended). It takes r.mu.
func (r *room) dropLink(l *link) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.links[l]
	if m == nil {
		return
	}
	for user, n := range m.users {
		r.dropUser(user, n)
	}
	r.tally.joined.Add(-int64(m.conns))
	delete(r.links, l)
}

func (r *room) dropUser(user uint64, n int) {
	if r.users[user] -= n; r.users[user] <= 0 {
		delete(r.users, user)
		r.tally.members.Add(-1)
	}
}

// idle reports a room the sweep may drop: no joined connection, and its newest event (or its
// instantiation, with none) older than the buffer age, so nothing is left to replay.
func (r *room) idle(now time.Time, age time.Duration) bool {
	// Moderation is stored (modstore) and reloaded with the room; only slow mode's last posts
	// are not, so a room stays while a member's interval may still be running.
	return len(r.links) == 0 && now.Sub(r.last) > max(age, r.mod.slow)
}
