package room

import (
	"time"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/rpc"
)

// moderation is a room's operator state: bans and mutes (zero time: until lifted), slow mode
// and the room's publish rate limit. It lives under the room's lock; the decisions are also
// stored in the core Redis (modstore) before they take effect here, and loaded when the room is
// instantiated, so they survive a restart of the RoomWriter. Slow mode's last posts and the
// rate limit's tokens are not stored.
//
// Invariants: a banned user has no joined connection in the room (ban removes them, join
// refuses); a publish refused here consumes no room_seq and no slow-mode or rate budget; a retry
// of an event still buffered is answered before moderation is consulted, so a mute never turns
// an already accepted event into a refusal; a decision whose store failed changes nothing here.
type moderation struct {
	bans, mutes map[uint64]time.Time
	slow        time.Duration
	lastPost    map[uint64]time.Time // slow mode: each member's last accepted publish
	rate        int                  // publishes per second, 0: off
	tokens      float64
	tokensAt    time.Time
}

// active reports whether a ban or mute entry of user holds at now (expired ones are deleted).
func active(m map[uint64]time.Time, user uint64, now time.Time) bool {
	until, ok := m[user]
	if ok && !until.IsZero() && !now.Before(until) {
		delete(m, user)
		return false
	}
	return ok
}

// admitPublish decides whether user may publish at now: nil, or a refusal (NOT_MEMBER for a
// ban or mute, RATE_LIMITED with the wait for slow mode and the rate limit). Accepting consumes
// the member's slow-mode slot and one token.
func (m *moderation) admitPublish(user uint64, now time.Time) (time.Duration, error) {
	switch {
	case active(m.bans, user, now):
		return 0, rpc.Refuse(contract.ErrCodeNotMember, "banned from this room")
	case active(m.mutes, user, now):
		return 0, rpc.Refuse(contract.ErrCodeNotMember, "muted in this room")
	}
	if last, ok := m.lastPost[user]; ok && m.slow > 0 && now.Sub(last) < m.slow {
		wait := m.slow - now.Sub(last)
		return wait, rpc.Refuse(contract.ErrCodeRateLimited, "slow mode: one message per %s per member", m.slow)
	}
	if m.rate > 0 {
		m.refill(now)
		if m.tokens < 1 {
			wait := time.Duration((1 - m.tokens) / float64(m.rate) * float64(time.Second))
			return wait, rpc.Refuse(contract.ErrCodeRateLimited, "the room takes at most %d messages per second", m.rate)
		}
		m.tokens--
	}
	if m.slow > 0 {
		m.lastPost[user] = now
	}
	return 0, nil
}

// refill adds the tokens earned since the last refill; the bucket holds one second's worth.
func (m *moderation) refill(now time.Time) {
	if !m.tokensAt.IsZero() {
		m.tokens += now.Sub(m.tokensAt).Seconds() * float64(m.rate)
	}
	m.tokens = min(m.tokens, float64(m.rate))
	m.tokensAt = now
}

func until(now time.Time, seconds uint32) time.Time {
	if seconds == 0 {
		return time.Time{}
	}
	return now.Add(time.Duration(seconds) * time.Second)
}

// moderate applies one action to r at now; removed lists the links that held connections of a
// kicked or banned user (their RoomRemoval is already queued). r.mu is held.
func (r *room) moderate(in *internalv1.RoomModeration, now time.Time) error {
	m := &r.mod
	switch a := in.GetAction().(type) {
	case *internalv1.RoomModeration_Ban:
		m.bans[a.Ban.GetUserId()] = until(now, a.Ban.GetDurationS())
		r.remove(a.Ban.GetUserId(), in.GetRoomId())
	case *internalv1.RoomModeration_Unban:
		delete(m.bans, a.Unban.GetUserId())
	case *internalv1.RoomModeration_Kick:
		r.remove(a.Kick.GetUserId(), in.GetRoomId())
	case *internalv1.RoomModeration_Mute:
		m.mutes[a.Mute.GetUserId()] = until(now, a.Mute.GetDurationS())
	case *internalv1.RoomModeration_Unmute:
		delete(m.mutes, a.Unmute.GetUserId())
	case *internalv1.RoomModeration_SlowMode:
		m.slow = time.Duration(a.SlowMode.GetIntervalMs()) * time.Millisecond
		clear(m.lastPost)
	case *internalv1.RoomModeration_RateLimit:
		m.rate, m.tokens, m.tokensAt = int(a.RateLimit.GetEventsPerS()), float64(a.RateLimit.GetEventsPerS()), now
	case *internalv1.RoomModeration_Info:
	default:
		return rpc.Refuse(contract.ErrCodeInvalidArgument, "no moderation action")
	}
	return nil
}

// remove ends every joined connection of user in the room: the memberships go here, and each
// link that held some is told to end them (RoomRemoval, reason REMOVED) without leaving them.
func (r *room) remove(user uint64, roomID []byte) {
	for l, m := range r.links {
		n := m.users[user]
		if n == 0 {
			continue
		}
		delete(m.users, user)
		m.conns -= n
		r.dropUser(user, n)
		r.tally.joined.Add(-int64(n))
		if m.conns == 0 {
			delete(r.links, l)
			l.forget(r)
		}
		l.push(linkItem{removal: &internalv1.RoomRemoval{TenantId: r.tenantID, RoomId: roomID, UserId: user,
			Reason: uint32(contract.RoomLeftRemoved)}, size: 64})
	}
}

// info is the room's counts. r.mu is held.
func (r *room) info(now time.Time) *internalv1.RoomInfo {
	conns := 0
	for _, m := range r.links {
		conns += m.conns
	}
	r.ring.evict(now)
	return &internalv1.RoomInfo{RoomSeq: r.seq, Members: uint32(len(r.users)), Connections: uint32(conns),
		BufferedEvents: uint32(r.ring.len()), SlowModeMs: uint32(r.mod.slow / time.Millisecond), RateLimitPerS: uint32(r.mod.rate),
		Bans: uint32(len(r.mod.bans)), Mutes: uint32(len(r.mod.mutes))}
}

// moderate is the Moderate RPC: the action stored, then applied under the room's lock
// (instantiating the room, so a ban can precede the first join), then the room's counts. A
// decision that could not be stored is refused UNAVAILABLE and changes nothing.
func (s *Service) moderate(in *internalv1.RoomModeration) (*internalv1.RoomInfo, error) {
	key, err := roomKeyOf(in.GetTenantId(), in.GetRoomId())
	if err != nil {
		return nil, err
	}
	if err := checkUser(in); err != nil {
		return nil, err
	}
	var info *internalv1.RoomInfo
	now := s.now()
	lerr := s.withRoom(key, now, func(r *room) {
		if err = s.store(r, in, now); err != nil {
			return
		}
		if err = r.moderate(in, now); err == nil {
			info = r.info(now)
		}
	})
	if lerr != nil {
		return nil, lerr
	}
	return info, err
}

// checkUser refuses a user action without a user.
func checkUser(in *internalv1.RoomModeration) error {
	var a *internalv1.RoomUserAction
	switch x := in.GetAction().(type) {
	case *internalv1.RoomModeration_Ban:
		a = x.Ban
	case *internalv1.RoomModeration_Unban:
		a = x.Unban
	case *internalv1.RoomModeration_Kick:
		a = x.Kick
	case *internalv1.RoomModeration_Mute:
		a = x.Mute
	case *internalv1.RoomModeration_Unmute:
		a = x.Unmute
	default:
		return nil
	}
	if a.GetUserId() == 0 {
		return rpc.Refuse(contract.ErrCodeInvalidArgument, "no user_id")
	}
	return nil
}
