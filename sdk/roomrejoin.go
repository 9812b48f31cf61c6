package sdk

// Keeping the joined set joined: memberships are per connection and the server restores none,
// so the SDK rejoins every room of the set after each AUTH_OK, and retries a rejoin the server
// refused with a retryable code (UNAVAILABLE while the room's server is down) after a jittered,
// growing pause capped at sendRetryMax. A refusal that cannot change (UNIMPLEMENTED, an id the
// server rejects) takes the room out of the set with RoomLeft{Err}: retrying it forever would
// hide the failure from the app.

import (
	"math/rand/v2"
	"time"

	"github.com/qim-dev/qim/contract"
)

// rejoinRooms joins every idle room of the set on a new connection, from where delivery stopped.
func (e *engine) rejoinRooms(now time.Time) {
	for key, en := range e.rooms.rooms {
		if en.phase == roomIdle && e.roomsUp() {
			en.retry.reset()
			e.sendJoin(key, en, now)
		}
	}
	e.rooms.publish()
}

// detachRooms: the connection is gone, and every membership with it. An app's JoinRoom still
// waiting never joined (ErrOffline) and a LeaveRoom waiting is done; the rest of the set waits,
// idle, for the next AUTH_OK. Room sends in flight are sent again then, with the same id.
func (e *engine) detachRooms() {
	for key, en := range e.rooms.rooms {
		switch {
		case en.join != nil:
			en.join.reply <- roomResult{err: ErrOffline}
			delete(e.rooms.rooms, key)
		case en.phase == roomLeaving:
			e.forgetRoom(key, en, contract.RoomLeftRequested, nil)
		default:
			en.phase, en.joinID, en.early, en.retryAt = roomIdle, 0, nil, time.Time{}
		}
	}
	for _, s := range e.rooms.sends {
		s.reqID = 0
	}
	e.rooms.publish()
}

// onRoomJoinError handles an ERROR answering JOIN_ROOM. The app's own join returns it and the
// room never enters the set; a rejoin is retried or given up.
func (e *engine) onRoomJoinError(id uint32, r *request, se *ServerError, now time.Time) {
	en := e.rooms.rooms[r.room]
	if en == nil || en.phase != roomJoining || en.joinID != id {
		return
	}
	if en.join != nil {
		en.join.reply <- roomResult{err: se}
		delete(e.rooms.rooms, r.room)
		e.rooms.publish()
		return
	}
	en.phase, en.joinID, en.early = roomIdle, 0, nil
	switch {
	case se.Code == contract.ErrCodeUnauthorized:
		e.fail(se) // re-authenticate; the room is rejoined after the next AUTH_OK
	case se.Retryable():
		d := en.retry.next()
		if h := se.RetryAfter; h > 0 {
			d = h + time.Duration(rand.Int64N(int64(h/5)+1))
		}
		en.retryAt = now.Add(d)
	default:
		e.log.Warn("sdk: rejoin refused; the room leaves the joined set", "code", se.Code.String())
		reason := contract.RoomLeftUnavailable
		if se.Code == contract.ErrCodeNotMember { // banned meanwhile
			reason = contract.RoomLeftRemoved
		}
		e.forgetRoom(r.room, en, reason, se)
		return
	}
	e.rooms.publish()
}

// onRoomLeaveError: the server refused LEAVE_ROOM (it answers REQUESTED even for a room not
// joined, so this is a malformed request). The app asked to leave: the room leaves the set
// anyway, and its events, if any still come, are dropped.
func (e *engine) onRoomLeaveError(r *request, se *ServerError) {
	e.log.Warn("sdk: LEAVE_ROOM refused", "code", se.Code.String())
	if en := e.rooms.rooms[r.room]; en != nil && en.phase == roomLeaving {
		e.forgetRoom(r.room, en, contract.RoomLeftRequested, nil)
	}
}

// roomsDeadline is the earliest scheduled rejoin or room send retry; zero when none.
func (e *engine) roomsDeadline() time.Time {
	var d time.Time
	at := func(t time.Time) {
		if !t.IsZero() && (d.IsZero() || t.Before(d)) {
			d = t
		}
	}
	if !e.roomsUp() {
		return d
	}
	for _, en := range e.rooms.rooms {
		if en.phase == roomIdle {
			at(en.retryAt)
		}
	}
	for _, s := range e.rooms.sends {
		if s.reqID == 0 {
			at(s.retryAt)
		}
	}
	return d
}

// roomsTick runs the rejoins and room send retries that are due.
func (e *engine) roomsTick(now time.Time) {
	rejoined := false
	for key, en := range e.rooms.rooms {
		if en.phase == roomIdle && !en.retryAt.IsZero() && !now.Before(en.retryAt) && e.roomsUp() {
			e.sendJoin(key, en, now)
			rejoined = true
		}
	}
	if rejoined {
		e.rooms.publish()
	}
	e.flushRoomSends(now)
}
