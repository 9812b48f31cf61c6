// Package modstore keeps the RoomWriters' room moderation in the core Redis: the bans, mutes,
// slow mode and rate limit an operator set on a room, so that they survive a restart of the
// RoomWriter owning it (ADR-0034, section 6). A room's events, buffer and memberships stay in
// the RoomWriter's memory; this is the one thing of a room that Redis holds.
//
// One hash per moderated room, qim:roommod:<tenant>:<room> (both 32 hex digits, the room as
// its canonical conversation id): "b:<user>" and "m:<user>" hold a ban's and a mute's end in
// Unix ms ("0": until lifted), "slow" the slow-mode interval in ms, "rate" the rate limit in
// events per second. A room without a decision in force has no key.
//
// Invariants:
//   - write-through before the answer: the RoomWriter applies a decision in memory only after
//     Apply returned nil, under the room's lock, so an acknowledged decision is durable (core
//     Redis runs appendfsync always) and one that failed to store is refused, never half-made;
//   - load before the first answer: a room's state is loaded when its RoomWriter instantiates
//     it, before any join or publish of it is decided; a failed load refuses them (UNAVAILABLE),
//     it never decides them on an empty state;
//   - ended entries are never in force: Load skips them, and moderate.lua deletes them.
//
// Kicks are not stored: a kick ends the connections joined now and nothing afterwards. Slow
// mode's per-member last post and the rate limit's tokens are not stored either: a restart at
// worst lets each member post once more before the interval is up.
//
// Rejected: keeping the decisions in the RoomWriter's memory only (the state before this
// package): a restart of the RoomWriter, which clients otherwise ride out by rejoining, lifted
// every ban. And a Redis hash field TTL per ban (HPEXPIRE): Redis 7.4 only, above the 7.0 every
// other store needs; an ended entry is instead removed by the next decision of the room.
package modstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/keyfamily"
	"github.com/qim-dev/qim/services/internal/luascript"
)

//go:embed lua/*.lua
var luaFS embed.FS

// KeyPrefix starts every moderation key.
const KeyPrefix = "qim:roommod:"

// moderateArgs calls moderate.lua.
type moderateArgs struct {
	Mod   string `key:"mod"`
	Field string `arg:"field"`
	Value string `arg:"value"`
	NowMs int64  `arg:"now_ms"`
}

// moderateOut is moderate.lua's answer.
type moderateOut struct {
	Fields int64 `reply:"fields"`
}

var moderateScript = luascript.MustBind[moderateArgs, moderateOut](luaFS, "", "moderate.lua")

// ErrCorrupt: a stored moderation value is not what Apply writes. The room refuses its joins
// and publishes until an operator repairs or deletes the key.
var ErrCorrupt = errors.New("modstore: corrupt moderation state")

// State is a room's moderation in force. A zero end time means until lifted.
type State struct {
	Bans, Mutes map[uint64]time.Time
	Slow        time.Duration
	Rate        int // publishes per second, 0: off
}

// Store reads and writes the moderation hashes of one core Redis.
type Store struct{ rdb redis.Cmdable }

// New is a Store on rdb (the core Redis: QIM_REDIS_ADDR).
func New(rdb redis.Cmdable) *Store { return &Store{rdb: rdb} }

// Key is the moderation hash of a room.
func Key(tenant contract.TenantID, room contract.ConversationID) string {
	return KeyPrefix + tenant.String() + ":" + room.String()
}

// KeyFamilies declares the key this package writes, for the redis-artifacts gate.
func KeyFamilies() []keyfamily.Family {
	return []keyfamily.Family{
		keyfamily.New("modstore.room_moderation", keyfamily.Core, "qim:roommod:<tenant>:<room>", KeyPrefix,
			`[0-9a-f]{32}:[0-9a-f]{32}`).
			WithExample(Key(contract.TenantID{Lo: 1}, contract.ConversationID{Hi: 3 << 60, Lo: 2})).
			Permanent("an operator's ban, mute, slow mode or rate limit holds until lifted; ended entries are deleted by the room's next decision"),
	}
}

// Preload loads the script, so the first decision pays no NOSCRIPT trip.
func (s *Store) Preload(ctx context.Context) error {
	if err := luascript.Preload(ctx, s.rdb, moderateScript.Script()); err != nil {
		return fmt.Errorf("modstore: %w", err)
	}
	return nil
}

// Load reads the room's decisions in force at now.
func (s *Store) Load(ctx context.Context, tenant contract.TenantID, room contract.ConversationID, now time.Time) (State, error) {
	st := State{Bans: map[uint64]time.Time{}, Mutes: map[uint64]time.Time{}}
	key := Key(tenant, room)
	all, err := s.rdb.HGetAll(ctx, key).Result()
	if err != nil {
		return st, fmt.Errorf("modstore: load %s: %w", key, err)
	}
	for f, v := range all {
		if err := st.set(f, v, now); err != nil {
			return st, fmt.Errorf("%w: %s field %q: %v", ErrCorrupt, key, f, err)
		}
	}
	return st, nil
}

// set puts one stored field into st, skipping an entry that ended at or before now.
func (st *State) set(field, value string, now time.Time) error {
	n, err := strconv.ParseUint(value, 10, 53)
	if err != nil {
		return err
	}
	switch {
	case field == "slow":
		st.Slow = time.Duration(n) * time.Millisecond
	case field == "rate":
		st.Rate = int(n)
	case strings.HasPrefix(field, "b:"), strings.HasPrefix(field, "m:"):
		user, err := strconv.ParseUint(field[2:], 10, 64)
		if err != nil || user == 0 {
			return errors.New("not a user id")
		}
		var ends time.Time
		if n > 0 {
			if ends = time.UnixMilli(int64(n)); !now.Before(ends) {
				return nil
			}
		}
		if field[0] == 'b' {
			st.Bans[user] = ends
		} else {
			st.Mutes[user] = ends
		}
	default:
		return errors.New("unknown field")
	}
	return nil
}

// Apply stores one decision taken at now. A kick or an info request stores nothing.
func (s *Store) Apply(ctx context.Context, in *internalv1.RoomModeration, tenant contract.TenantID,
	room contract.ConversationID, now time.Time) error {
	field, value, ok := fieldOf(in, now)
	if !ok {
		return nil
	}
	_, err := moderateScript.Do(ctx, s.rdb, &moderateArgs{Mod: Key(tenant, room), Field: field, Value: value, NowMs: now.UnixMilli()})
	if err != nil {
		return fmt.Errorf("modstore: apply to %s: %w", Key(tenant, room), err)
	}
	return nil
}

// fieldOf is the hash field and value of one decision ("" value: delete); ok false for the
// actions that store nothing.
func fieldOf(in *internalv1.RoomModeration, now time.Time) (field, value string, ok bool) {
	ends := func(a *internalv1.RoomUserAction) string {
		if a.GetDurationS() == 0 {
			return "0"
		}
		return strconv.FormatInt(now.Add(time.Duration(a.GetDurationS())*time.Second).UnixMilli(), 10)
	}
	user := func(prefix string, a *internalv1.RoomUserAction) string {
		return prefix + strconv.FormatUint(a.GetUserId(), 10)
	}
	switch a := in.GetAction().(type) {
	case *internalv1.RoomModeration_Ban:
		return user("b:", a.Ban), ends(a.Ban), true
	case *internalv1.RoomModeration_Unban:
		return user("b:", a.Unban), "", true
	case *internalv1.RoomModeration_Mute:
		return user("m:", a.Mute), ends(a.Mute), true
	case *internalv1.RoomModeration_Unmute:
		return user("m:", a.Unmute), "", true
	case *internalv1.RoomModeration_SlowMode:
		return "slow", strconv.FormatUint(uint64(a.SlowMode.GetIntervalMs()), 10), true
	case *internalv1.RoomModeration_RateLimit:
		return "rate", strconv.FormatUint(uint64(a.RateLimit.GetEventsPerS()), 10), true
	}
	return "", "", false
}
