package room

import (
	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/rpc"
)

// Outcomes of a join (the outcome label of qim_room_joins_total).
const (
	joinOK      = "ok"
	joinRefused = "refused"
	joinEnded   = "link_ended" // the link ended before the answer could be queued
)

// join applies one RoomJoinCall of l: a refused call is answered with its error code; an accepted
// one instantiates the room if needed and registers the connection, its answer (with the replay)
// queued on l under the room's lock (room.join).
func (s *Service) join(l *link, c *internalv1.RoomJoinCall) {
	key, err := roomKeyOf(c.GetTenantId(), c.GetRoomId())
	if err == nil && c.GetUserId() == 0 {
		err = rpc.Refuse(contract.ErrCodeUnauthorized, "no authenticated user")
	}
	if err != nil {
		s.refuseJoin(l, c, err)
		return
	}
	var truncated, admitted, banned bool
	now := s.now()
	err = s.withRoom(key, now, func(r *room) {
		// Checked under the room's lock: a ban applied concurrently either removed this
		// connection already or refuses it here.
		if banned = active(r.mod.bans, c.GetUserId(), now); banned {
			l.push(answerItem(&internalv1.RoomJoinAnswer{CallId: c.GetCallId(),
				ErrorCode: uint32(contract.ErrCodeNotMember), ErrorMessage: "banned from this room"}))
			return
		}
		truncated, admitted = r.join(l, c, now)
	})
	switch {
	case err != nil: // the room's moderation could not be loaded
		s.refuseJoin(l, c, err)
		return
	case banned:
		s.m.joins.WithLabelValues(joinRefused).Inc()
		return
	case !admitted:
		s.m.joins.WithLabelValues(joinEnded).Inc()
		return
	case truncated:
		s.m.truncated.Inc()
	}
	s.m.joins.WithLabelValues(joinOK).Inc()
}

// refuseJoin answers c with err's code; nothing is registered.
func (s *Service) refuseJoin(l *link, c *internalv1.RoomJoinCall, err error) {
	s.m.joins.WithLabelValues(joinRefused).Inc()
	l.push(answerItem(&internalv1.RoomJoinAnswer{CallId: c.GetCallId(),
		ErrorCode: uint32(rpc.CodeOf(err)), ErrorMessage: rpc.ClientMessage(err)}))
}

// leave applies one RoomLeaveCall of l. A leave with no joined connection to end (a duplicate,
// or one for a link whose memberships were already removed) changes nothing and is counted: the
// gateway sends exactly one per successful join, so a steady rate means a gateway bug.
func (s *Service) leave(l *link, c *internalv1.RoomLeaveCall) {
	key, err := roomKeyOf(c.GetTenantId(), c.GetRoomId())
	left := false
	if err == nil {
		s.rooms.with(key, s.now(), false, func(r *room) { left = r.leave(l, c.GetUserId()) })
	}
	if !left {
		s.m.leavesIgnored.Inc()
	}
}
