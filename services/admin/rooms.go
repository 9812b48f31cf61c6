package admin

// Room routes: an operator's moderation of a room (ban, kick, mute, slow mode, rate limit) and
// its counts, over RoomWriter.Moderate on the room's owner (ADR-0034; roomwriters.go). The
// admin API holds the admin certificate the RPC needs; an API key with scope "rooms" is what a
// product backend holds instead. The RoomWriter stores each decision in the core Redis before it
// answers, so bans, mutes, slow mode and rate limits survive its restart (kicks end only the
// connections joined at the time).

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// RoomModerationRequest is one moderation decision about one room.
type RoomModerationRequest struct {
	Tenant     string `json:"tenant,omitempty" doc:"tenant as 32 hex digits (default: tenant 0)"`
	Room       string `json:"room" doc:"room id, 32 hex digits"`
	Action     string `json:"action" doc:"ban, unban, kick, mute, unmute, slow_mode or rate_limit"`
	User       uint64 `json:"user,omitempty" doc:"the user a ban, unban, kick, mute or unmute applies to (required for those, refused for the others)"`
	DurationS  uint32 `json:"duration_s,omitempty" doc:"ban and mute only: how long it lasts, in seconds (default 0: until lifted)"`
	IntervalMs uint32 `json:"interval_ms,omitempty" doc:"slow_mode only: at most one message per member per this many milliseconds (0 or absent: slow mode off)"`
	EventsPerS uint32 `json:"events_per_s,omitempty" doc:"rate_limit only: at most this many messages per second into the room (0 or absent: no limit)"`
}

// RoomQuery names a room in a GET's query.
type RoomQuery struct {
	Tenant string `json:"tenant,omitempty" doc:"tenant as 32 hex digits (default: tenant 0)"`
	Room   string `json:"room" doc:"room id, 32 hex digits"`
}

// RoomInfo is a room's state on its RoomWriter.
type RoomInfo struct {
	Room           string `json:"room" doc:"room id, 32 hex digits"`
	RoomSeq        uint64 `json:"room_seq" doc:"latest room_seq issued (the epoch's base before the first event)"`
	Members        uint32 `json:"members" doc:"distinct users with a joined connection"`
	Online         uint32 `json:"online" doc:"joined connections"`
	BufferedEvents uint32 `json:"buffered_events" doc:"events in the room's replay buffer"`
	SlowModeMs     uint32 `json:"slow_mode_ms" doc:"slow mode interval in milliseconds (0: off)"`
	RateLimitPerS  uint32 `json:"rate_limit_per_s" doc:"messages per second the room accepts (0: no limit)"`
	Bans           uint32 `json:"bans" doc:"ban entries (one that expired is counted until the RoomWriter next checks that user)"`
	Mutes          uint32 `json:"mutes" doc:"mute entries (as bans)"`
}

// roomAction is one action of POST /v1/rooms/moderation: the request fields it takes and how
// it fills the RoomModeration oneof. A field an action does not take is refused rather than
// ignored: {"action": "kick", "duration_s": 600} is more likely a ban mistyped than a kick.
type roomAction struct {
	name                           string
	user, duration, interval, rate bool
	set                            func(m *internalv1.RoomModeration, r RoomModerationRequest)
}

// roomActions are the actions, in the order the errors list them.
var roomActions = []roomAction{
	{name: "ban", user: true, duration: true, set: func(m *internalv1.RoomModeration, r RoomModerationRequest) {
		m.Action = &internalv1.RoomModeration_Ban{Ban: r.userAction()}
	}},
	{name: "unban", user: true, set: func(m *internalv1.RoomModeration, r RoomModerationRequest) {
		m.Action = &internalv1.RoomModeration_Unban{Unban: r.userAction()}
	}},
	{name: "kick", user: true, set: func(m *internalv1.RoomModeration, r RoomModerationRequest) {
		m.Action = &internalv1.RoomModeration_Kick{Kick: r.userAction()}
	}},
	{name: "mute", user: true, duration: true, set: func(m *internalv1.RoomModeration, r RoomModerationRequest) {
		m.Action = &internalv1.RoomModeration_Mute{Mute: r.userAction()}
	}},
	{name: "unmute", user: true, set: func(m *internalv1.RoomModeration, r RoomModerationRequest) {
		m.Action = &internalv1.RoomModeration_Unmute{Unmute: r.userAction()}
	}},
	{name: "slow_mode", interval: true, set: func(m *internalv1.RoomModeration, r RoomModerationRequest) {
		m.Action = &internalv1.RoomModeration_SlowMode{SlowMode: &internalv1.RoomSlowMode{IntervalMs: r.IntervalMs}}
	}},
	{name: "rate_limit", rate: true, set: func(m *internalv1.RoomModeration, r RoomModerationRequest) {
		m.Action = &internalv1.RoomModeration_RateLimit{RateLimit: &internalv1.RoomRateLimit{EventsPerS: r.EventsPerS}}
	}},
}

func (r RoomModerationRequest) userAction() *internalv1.RoomUserAction {
	return &internalv1.RoomUserAction{UserId: r.User, DurationS: r.DurationS}
}

// action checks the request against its action and returns the function that fills the oneof.
func (r RoomModerationRequest) action() (func(*internalv1.RoomModeration), error) {
	i := -1
	names := make([]string, len(roomActions))
	for j, a := range roomActions {
		names[j] = a.name
		if a.name == r.Action {
			i = j
		}
	}
	if i < 0 {
		return nil, fmt.Errorf("%w: action: %q is not one of %s", errBadRequest, r.Action, strings.Join(names, ", "))
	}
	act := roomActions[i]
	if act.user && r.User == 0 {
		return nil, fmt.Errorf("%w: user: %s needs a user id", errBadRequest, act.name)
	}
	for _, f := range []struct {
		name         string
		given, takes bool
	}{{"user", r.User != 0, act.user}, {"duration_s", r.DurationS != 0, act.duration},
		{"interval_ms", r.IntervalMs != 0, act.interval}, {"events_per_s", r.EventsPerS != 0, act.rate}} {
		if f.given && !f.takes {
			return nil, fmt.Errorf("%w: %s does not apply to %s", errBadRequest, f.name, act.name)
		}
	}
	return func(m *internalv1.RoomModeration) { act.set(m, r) }, nil
}

func roomModerate(ctx context.Context, a *api, in input) (int, any, []any, error) {
	var req RoomModerationRequest
	if err := decode(in.body, &req); err != nil {
		return 0, nil, nil, err
	}
	audit := []any{"room", req.Room, "action", req.Action, "user", req.User}
	set, err := req.action()
	if err != nil {
		return 0, nil, audit, err
	}
	info, err := a.callRoom(ctx, req.Tenant, req.Room, set)
	if err != nil {
		return 0, nil, audit, err
	}
	return http.StatusOK, info, audit, nil
}

func roomInfo(ctx context.Context, a *api, in input) (int, any, []any, error) {
	var q RoomQuery
	if err := decodeQuery(in.query, &q); err != nil {
		return 0, nil, nil, err
	}
	audit := []any{"room", q.Room, "action", "info"}
	info, err := a.callRoom(ctx, q.Tenant, q.Room, func(m *internalv1.RoomModeration) {
		m.Action = &internalv1.RoomModeration_Info{Info: true}
	})
	if err != nil {
		return 0, nil, audit, err
	}
	return http.StatusOK, info, audit, nil
}

// callRoom sends the moderation set fills to the room's owner and maps its answer: the room's
// info, or its refusal as the group routes map a writer's.
func (a *api) callRoom(ctx context.Context, tenant, room string, set func(*internalv1.RoomModeration)) (RoomInfo, error) {
	t, err := parseTenant(tenant)
	if err != nil {
		return RoomInfo{}, err
	}
	id, err := contract.ParseU128(room)
	conv, cerr := contract.RoomConversationID(id)
	if err != nil || cerr != nil {
		return RoomInfo{}, fmt.Errorf("%w: room: want 32 hex digits, not zero", errBadRequest)
	}
	if a.rooms == nil {
		return RoomInfo{}, fmt.Errorf("%w: room routes are off (no QIM_ROOM_ADDRS)", errNotFound)
	}
	m := &internalv1.RoomModeration{TenantId: t.AppendBytes(nil), RoomId: id.AppendBytes(nil)}
	set(m)
	out, err := a.rooms.Moderate(ctx, t, conv, m)
	if err != nil {
		return RoomInfo{}, err
	}
	if err := refusal(contract.ErrorCode(out.GetErrorCode()), out.GetErrorMessage()); err != nil {
		return RoomInfo{}, err
	}
	i := out.GetInfo()
	return RoomInfo{Room: id.String(), RoomSeq: i.GetRoomSeq(), Members: i.GetMembers(), Online: i.GetConnections(),
		BufferedEvents: i.GetBufferedEvents(), SlowModeMs: i.GetSlowModeMs(), RateLimitPerS: i.GetRateLimitPerS(),
		Bans: i.GetBans(), Mutes: i.GetMutes()}, nil
}
