package sdk

// Room state: which rooms the app has joined, how far each has been delivered, and the room
// sends waiting for their SEND_ACK.
//
// Invariants: room state lives in memory for the Client's lifetime and never in the store — a
// room has no cursor, no session row, no unread and no pending send, and nothing here calls the
// store; a room stays in the set from the app's JoinRoom until its LeaveRoom, or until the server
// ends the membership for good (REMOVED, ROOM_CLOSED, a rejoin refused), whatever happens to the
// connection, so the SDK can rejoin it with replay_from_room_seq = the last delivered + 1; an
// event at or below seq is never delivered again, and seq moves back only when a ROOM_JOINED
// says the room now ends below it (its server restarted with a clock behind the old one's): the
// SDK then follows the server rather than drop every event of the new epoch.
//
// Ownership: the connection goroutine owns the set while a connection loop runs; with no loop
// running, a caller holding Client.mu does (LeaveRoom offline), and Connect takes that lock to
// start a loop. Apps read Rooms from a snapshot published after every change.
//
// Rejected: a mutex around the entries shared by the engine and the app's calls. The engine
// would hold it across socket writes, and Rooms would wait behind a slow socket.

import (
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

type roomPhase uint8

const (
	roomIdle    roomPhase = iota + 1 // wanted but not joined on this connection: offline, or a rejoin waits for retryAt
	roomJoining                      // JOIN_ROOM in flight
	roomLive                         // ROOM_JOINED received: events are delivered
	roomLeaving                      // LEAVE_ROOM in flight for the app's LeaveRoom
)

// roomEntry is one room of the joined set.
type roomEntry struct {
	room  contract.U128 // as the app spelled it: events report it so
	phase roomPhase
	// seq is the last room_seq delivered, or the join point of a live-only join; 0 = none yet.
	seq      uint64
	opts     RoomJoinOptions // the app's, for a rejoin before any room_seq is known
	replayed bool            // the JOIN_ROOM in flight asked for a replay
	joinID   uint32          // request id of the JOIN_ROOM in flight
	join     *roomCmd        // the app's JoinRoom waiting for its answer; nil for the SDK's rejoin
	leave    *roomCmd        // the app's LeaveRoom waiting for ROOM_LEFT REQUESTED
	// early: a server ROOM_LEFT overtook the ROOM_JOINED of the membership it ends (the gateway
	// sends ROOM_LEFT on its control queue, ROOM_JOINED behind queued events); it is applied as
	// soon as the join is.
	early   *contract.RoomLeftReason
	retry   backoff   // rejoins refused with a retryable code
	retryAt time.Time // when an idle room is rejoined; zero = at the next AUTH_OK
}

// roomSet is the Client's room state (see the file comment for who may touch it).
type roomSet struct {
	rooms map[contract.ConversationID]*roomEntry // by the room's canonical conversation id
	sends []*roomSend                            // SendRoom calls not answered yet, oldest first
	view  atomic.Pointer[[]RoomInfo]
}

func newRoomSet() *roomSet {
	return &roomSet{rooms: map[contract.ConversationID]*roomEntry{}}
}

// RoomInfo is one room of the joined set (Client.Rooms).
type RoomInfo struct {
	Room contract.U128
	// RoomSeq is the last room_seq delivered (or, before the first event, the room's latest at
	// join time); a rejoin replays from RoomSeq + 1.
	RoomSeq uint64
	// Joined: the membership is live on the current connection. False while offline or while
	// the SDK rejoins; the room stays in the set either way.
	Joined bool
}

// publish stores the snapshot Rooms returns.
func (rs *roomSet) publish() {
	v := make([]RoomInfo, 0, len(rs.rooms))
	for _, en := range rs.rooms {
		v = append(v, RoomInfo{Room: en.room, RoomSeq: en.seq, Joined: en.phase == roomLive})
	}
	slices.SortFunc(v, func(a, b RoomInfo) int { return a.Room.Compare(b.Room) })
	rs.view.Store(&v)
}

// snapshot is the latest published view, a copy the caller may keep.
func (rs *roomSet) snapshot() []RoomInfo {
	if v := rs.view.Load(); v != nil {
		return slices.Clone(*v)
	}
	return nil
}

// roomKey validates a room id given by the app. The server replaces the top 4 bits by the ROOM
// kind, so two spellings that differ only there are one room: the set is keyed by that form.
func roomKey(room contract.U128) (contract.ConversationID, error) {
	k, err := contract.RoomConversationID(room)
	if err != nil {
		return contract.ConversationID{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return k, nil
}

// roomKeyOfWire is the key of a room id in a frame.
func roomKeyOfWire(b []byte) (contract.ConversationID, error) {
	u, err := contract.U128FromBytes(b)
	if err != nil {
		return contract.ConversationID{}, fmt.Errorf("%w: room_id: %v", ErrProtocol, err)
	}
	k, err := contract.RoomConversationID(u)
	if err != nil {
		return contract.ConversationID{}, fmt.Errorf("%w: room_id: %v", ErrProtocol, err)
	}
	return k, nil
}

// deliver turns one ROOM_EVENTS batch into RoomEvents, one per run of consecutive room_seq: the
// run after a jump carries the Gap. Events at or below *seq (delivered already) are skipped, and
// *seq advances to the last event delivered. Before the first known position (*seq 0) there is
// nothing to compare with, so no gap is reported.
func deliver(room contract.U128, seq *uint64, evs []*qimv1.RoomEvent) []RoomEvents {
	var out []RoomEvents
	for _, ev := range evs {
		s := ev.GetRoomSeq()
		if s <= *seq {
			continue
		}
		if len(out) == 0 || s != *seq+1 {
			var gap *RoomGap
			if *seq != 0 && s != *seq+1 {
				gap = &RoomGap{After: *seq, Next: s}
			}
			out = append(out, RoomEvents{Room: room, Gap: gap})
		}
		run := &out[len(out)-1]
		run.Events = append(run.Events, RoomEvent{RoomSeq: s, Sender: contract.UserID(ev.GetSenderUserId()),
			Type: contract.MessageType(ev.GetMessageType()), CustomType: ev.GetCustomType(), Body: ev.GetBody(),
			SentAtMs: ev.GetSentAtMs()})
		*seq = s
	}
	return out
}
