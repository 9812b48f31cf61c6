package sdk

// Room memberships on the connection goroutine: JOIN_ROOM → ROOM_JOINED → ROOM_EVENTS, and
// LEAVE_ROOM or the server's ROOM_LEFT.
//
// Rooms go live at AUTH_OK without waiting for the mailbox reconciliation (they hold nothing the
// mailbox could prove) and never touch the store. A room leaves the joined set only by the app's
// LeaveRoom or by a ROOM_LEFT the SDK must not undo (REMOVED, ROOM_CLOSED) or a rejoin refused
// for good; a lost connection, ROOM_LEFT SLOW_CONSUMER and UNAVAILABLE make it idle, and it is
// rejoined with replay_from_room_seq = the last room_seq delivered + 1, at once or at the next
// AUTH_OK. Events are delivered only while the membership is live: a ROOM_LEFT may overtake
// events already on their way, and those of a room not (or no longer) joined are dropped.

import (
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

// errLeftBeforeJoined answers a JoinRoom whose room the app left before the server answered.
var errLeftBeforeJoined = errors.New("sdk: room left before the join was answered")

// startRoom takes an app's room call.
func (e *engine) startRoom(cmd *roomCmd, now time.Time) {
	if cmd.loop != e.loop {
		cmd.reply <- roomResult{err: ErrOffline} // left in the channel by a loop that ended
		return
	}
	switch cmd.op {
	case roomJoinOp:
		e.joinRoom(cmd, now)
	case roomLeaveOp:
		e.leaveRoom(cmd, now)
	case roomSendOp:
		cmd.send.retry = backoff{min: min(e.cfg.ReconnectMin, loginRetryMin), max: sendRetryMax}
		e.rooms.sends = append(e.rooms.sends, cmd.send)
		e.flushRoomSends(now)
	}
}

// roomsUp reports whether room requests can be sent: an authenticated connection.
func (e *engine) roomsUp() bool { return e.online && e.sink != nil && e.end == nil }

func (e *engine) joinRoom(cmd *roomCmd, now time.Time) {
	switch {
	case e.rooms.rooms[cmd.key] != nil:
		cmd.reply <- roomResult{err: ErrRoomJoined}
		return
	case len(e.rooms.rooms) >= contract.MaxJoinedRoomsPerConnection:
		cmd.reply <- roomResult{err: fmt.Errorf("%w (%d)", ErrTooManyRooms, contract.MaxJoinedRoomsPerConnection)}
		return
	case !e.roomsUp():
		cmd.reply <- roomResult{err: ErrOffline}
		return
	}
	en := &roomEntry{room: cmd.room, opts: cmd.opts, join: cmd,
		retry: backoff{min: min(e.cfg.ReconnectMin, loginRetryMin), max: sendRetryMax}}
	if cmd.opts.Replay && cmd.opts.ReplayFrom > 0 {
		en.seq = cmd.opts.ReplayFrom - 1 // a replay that starts later is a gap
	}
	e.rooms.rooms[cmd.key] = en
	e.sendJoin(cmd.key, en, now)
	e.rooms.publish()
}

// sendJoin sends JOIN_ROOM for en: from the room_seq after the last one delivered, or as the
// app first asked while none is known.
func (e *engine) sendJoin(key contract.ConversationID, en *roomEntry, now time.Time) {
	rid := en.room.Bytes()
	req := &qimv1.JoinRoom{RoomId: rid[:]}
	switch {
	case en.seq > 0:
		from := en.seq + 1
		req.ReplayFromRoomSeq = &from
	case en.opts.Replay:
		from := en.opts.ReplayFrom
		req.ReplayFromRoomSeq = &from
	}
	en.phase, en.replayed, en.early, en.retryAt = roomJoining, req.ReplayFromRoomSeq != nil, nil, time.Time{}
	if en.join == nil {
		e.stats.roomRejoins.Add(1)
	}
	en.joinID = e.request(reqRoomJoin, contract.OpJoinRoom, req, now, &request{room: key})
	if en.joinID != 0 {
		return
	}
	if en.join != nil { // the connection failed under the app's call: it never joined
		en.join.reply <- roomResult{err: ErrOffline}
		delete(e.rooms.rooms, key)
		return
	}
	en.phase = roomIdle // rejoined at the next AUTH_OK
}

func (e *engine) leaveRoom(cmd *roomCmd, now time.Time) {
	en := e.rooms.rooms[cmd.key]
	switch {
	case en == nil, en.phase == roomLeaving: // not joined, or a leave is already on its way
		cmd.reply <- roomResult{}
		return
	case en.phase == roomIdle || !e.roomsUp(): // no membership on the server to end
		en.leave = cmd
		e.forgetRoom(cmd.key, en, contract.RoomLeftRequested, nil)
		return
	case en.phase == roomJoining:
		// The server forgets a join it has not answered when the leave arrives, and then never
		// answers it: the request must not wait (and keep the ACK probe busy) forever.
		delete(e.reqs, en.joinID)
		if en.join != nil {
			en.join.reply <- roomResult{err: errLeftBeforeJoined}
			en.join = nil
		}
	}
	rid := en.room.Bytes()
	en.phase, en.leave, en.joinID = roomLeaving, cmd, 0
	if e.request(reqRoomLeave, contract.OpLeaveRoom, &qimv1.LeaveRoom{RoomId: rid[:]}, now, &request{room: cmd.key}) == 0 {
		e.forgetRoom(cmd.key, en, contract.RoomLeftRequested, nil) // the membership ends with the connection
		return
	}
	e.rooms.publish()
}

// forgetRoom removes a room from the joined set and reports RoomLeft; a LeaveRoom waiting for
// it returns.
func (e *engine) forgetRoom(key contract.ConversationID, en *roomEntry, reason contract.RoomLeftReason, err error) {
	delete(e.rooms.rooms, key)
	e.rooms.publish()
	if en.join != nil {
		en.join.reply <- roomResult{err: errLeftBeforeJoined}
		en.join = nil
	}
	e.emit(RoomLeft{Room: en.room, Reason: reason, Err: err})
	if en.leave != nil {
		en.leave.reply <- roomResult{}
		en.leave = nil
	}
}

// onRoomJoined makes a membership live and reports it, before any of its events.
func (e *engine) onRoomJoined(m wire.Message, now time.Time) {
	r := e.take(m.RequestID, reqRoomJoin)
	if r == nil {
		return // a join the app left before it was answered
	}
	en := e.rooms.rooms[r.room]
	if en == nil || en.phase != roomJoining || en.joinID != m.RequestID {
		return
	}
	var j qimv1.RoomJoined
	if err := proto.Unmarshal(m.Payload, &j); err != nil {
		e.roomProtocolError(r.room, en, fmt.Errorf("%w: ROOM_JOINED: %v", ErrProtocol, err))
		return
	}
	if k, err := roomKeyOfWire(j.GetRoomId()); err != nil || k != r.room {
		e.roomProtocolError(r.room, en, fmt.Errorf("%w: ROOM_JOINED for another room", ErrProtocol))
		return
	}
	if en.replayed {
		en.seq = min(en.seq, j.GetRoomSeq()) // a start beyond the room's latest must not hide what follows
	} else {
		en.seq = max(en.seq, j.GetRoomSeq())
	}
	en.phase, en.joinID, en.retryAt = roomLive, 0, time.Time{}
	en.retry.reset()
	e.rooms.publish()
	ev := RoomJoined{Room: en.room, RoomSeq: j.GetRoomSeq(), ReplayTruncated: j.GetReplayTruncated(), Rejoin: en.join == nil}
	e.emit(ev)
	if en.join != nil {
		en.join.reply <- roomResult{joined: ev}
		en.join = nil
	}
	if early := en.early; early != nil {
		en.early = nil
		e.roomEnded(r.room, en, *early, now)
	}
}

// roomProtocolError fails the app's join and drops the connection; a rejoin happens after it.
func (e *engine) roomProtocolError(key contract.ConversationID, en *roomEntry, err error) {
	if en.join != nil {
		en.join.reply <- roomResult{err: err}
		delete(e.rooms.rooms, key)
		e.rooms.publish()
	}
	e.fail(err)
}

// onRoomLeft is the answer to LEAVE_ROOM (request id set) or the server ending a membership.
func (e *engine) onRoomLeft(m wire.Message, now time.Time) {
	var l qimv1.RoomLeft
	if err := proto.Unmarshal(m.Payload, &l); err != nil {
		e.fail(fmt.Errorf("%w: ROOM_LEFT: %v", ErrProtocol, err))
		return
	}
	if m.RequestID != 0 {
		if r := e.take(m.RequestID, reqRoomLeave); r != nil {
			if en := e.rooms.rooms[r.room]; en != nil && en.phase == roomLeaving {
				e.forgetRoom(r.room, en, contract.RoomLeftRequested, nil)
			}
		}
		return
	}
	key, err := roomKeyOfWire(l.GetRoomId())
	if err != nil {
		e.log.Debug("sdk: ROOM_LEFT with a malformed room id", "err", err)
		return
	}
	en := e.rooms.rooms[key]
	reason := contract.RoomLeftReason(l.GetReason())
	switch {
	case en == nil, en.phase == roomIdle, en.phase == roomLeaving:
		return // of a membership already over, or one the app's leave is ending
	case en.phase == roomJoining:
		en.early = &reason // it overtook the ROOM_JOINED: applied right after it
		return
	}
	e.roomEnded(key, en, reason, now)
}

// roomEnded applies the server's end of a live membership: SLOW_CONSUMER and UNAVAILABLE are
// rejoined at once (an UNAVAILABLE room's server is probably still down: the refusal schedules
// the retry), anything else is final.
func (e *engine) roomEnded(key contract.ConversationID, en *roomEntry, reason contract.RoomLeftReason, now time.Time) {
	switch reason {
	case contract.RoomLeftSlowConsumer, contract.RoomLeftUnavailable:
		en.phase = roomIdle
		e.sendJoin(key, en, now)
		e.rooms.publish()
		e.emit(RoomLeft{Room: en.room, Reason: reason, Rejoining: true})
	default:
		e.forgetRoom(key, en, reason, nil)
	}
}

// onRoomEvents delivers the events of a live membership and drops the rest.
func (e *engine) onRoomEvents(m wire.Message) {
	var b qimv1.RoomEvents
	if err := proto.Unmarshal(m.Payload, &b); err != nil {
		e.fail(fmt.Errorf("%w: ROOM_EVENTS: %v", ErrProtocol, err))
		return
	}
	key, err := roomKeyOfWire(b.GetRoomId())
	en := e.rooms.rooms[key]
	if err != nil || en == nil || en.phase != roomLive {
		e.stats.roomDropped.Add(uint64(len(b.GetEvents())))
		return
	}
	if e.backlog() > e.cfg.EventBacklogPause {
		// The app is not reading: shed the batch without moving seq, so the next batch it gets
		// carries the Gap (and a rejoin would replay from the last event it did get).
		e.stats.roomShed.Add(uint64(len(b.GetEvents())))
		return
	}
	runs := deliver(en.room, &en.seq, b.GetEvents())
	e.rooms.publish() // before the events: an app reading Rooms on one sees its seq
	for _, ev := range runs {
		e.emit(ev)
	}
}
