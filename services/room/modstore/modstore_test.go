package modstore

import (
	"errors"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

func TestMain(m *testing.M) { os.Exit(itest.Main(m)) }

var t0 = time.UnixMilli(1_700_000_000_000)

// fixture is a store on the stack's core Redis and a room no other run has used.
func fixture(t *testing.T) (*Store, *redis.Client, contract.TenantID, contract.ConversationID) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: itest.Endpoints(t).RedisCore})
	t.Cleanup(func() { _ = rdb.Close() })
	return New(rdb), rdb, contract.TenantID{Hi: 1, Lo: rand.Uint64()}, contract.ConversationID{Hi: 3 << 60, Lo: rand.Uint64()}
}

func ban(u uint64, s uint32) *internalv1.RoomModeration {
	return &internalv1.RoomModeration{Action: &internalv1.RoomModeration_Ban{Ban: &internalv1.RoomUserAction{UserId: u, DurationS: s}}}
}

func apply(t *testing.T, st *Store, in *internalv1.RoomModeration, tn contract.TenantID, room contract.ConversationID, now time.Time) {
	t.Helper()
	if err := st.Apply(t.Context(), in, tn, room, now); err != nil {
		t.Fatal(err)
	}
}

// Every stored decision comes back from Load as it was set; lifting one removes its field, and
// the key goes with the last field.
func TestApplyLoadRoundTrip(t *testing.T) {
	st, rdb, tn, room := fixture(t)
	apply(t, st, ban(7, 0), tn, room, t0)
	apply(t, st, ban(9, 60), tn, room, t0)
	apply(t, st, &internalv1.RoomModeration{Action: &internalv1.RoomModeration_Mute{Mute: &internalv1.RoomUserAction{UserId: 8}}}, tn, room, t0)
	apply(t, st, &internalv1.RoomModeration{Action: &internalv1.RoomModeration_SlowMode{SlowMode: &internalv1.RoomSlowMode{IntervalMs: 1500}}}, tn, room, t0)
	apply(t, st, &internalv1.RoomModeration{Action: &internalv1.RoomModeration_RateLimit{RateLimit: &internalv1.RoomRateLimit{EventsPerS: 40}}}, tn, room, t0)
	apply(t, st, &internalv1.RoomModeration{Action: &internalv1.RoomModeration_Kick{Kick: &internalv1.RoomUserAction{UserId: 5}}}, tn, room, t0)
	got, err := st.Load(t.Context(), tn, room, t0)
	if err != nil {
		t.Fatal(err)
	}
	until, ok := got.Bans[9]
	if len(got.Bans) != 2 || !got.Bans[7].IsZero() || !ok || !until.Equal(t0.Add(time.Minute)) ||
		len(got.Mutes) != 1 || !got.Mutes[8].IsZero() || got.Slow != 1500*time.Millisecond || got.Rate != 40 {
		t.Fatalf("Load = %+v", got)
	}
	for _, in := range []*internalv1.RoomModeration{
		{Action: &internalv1.RoomModeration_Unban{Unban: &internalv1.RoomUserAction{UserId: 7}}},
		{Action: &internalv1.RoomModeration_Unban{Unban: &internalv1.RoomUserAction{UserId: 9}}},
		{Action: &internalv1.RoomModeration_Unmute{Unmute: &internalv1.RoomUserAction{UserId: 8}}},
		{Action: &internalv1.RoomModeration_SlowMode{SlowMode: &internalv1.RoomSlowMode{}}},
		{Action: &internalv1.RoomModeration_RateLimit{RateLimit: &internalv1.RoomRateLimit{}}},
	} {
		apply(t, st, in, tn, room, t0)
	}
	if n, err := rdb.Exists(t.Context(), Key(tn, room)).Result(); err != nil || n != 0 {
		t.Fatalf("the key outlived its last decision: exists %d, %v", n, err)
	}
}

// An ended ban is not in force after Load, and the room's next decision deletes it; one renewed
// before it ended is kept.
func TestEndedEntriesAreDropped(t *testing.T) {
	st, rdb, tn, room := fixture(t)
	apply(t, st, ban(7, 10), tn, room, t0)
	apply(t, st, ban(8, 10), tn, room, t0)
	apply(t, st, ban(8, 60), tn, room, t0.Add(5*time.Second)) // renewed: ends at t0+65s
	later := t0.Add(10 * time.Second)
	got, err := st.Load(t.Context(), tn, room, later)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Bans[7]; ok || len(got.Bans) != 1 {
		t.Fatalf("Load at the ban's end = %+v, want only user 8's ban", got.Bans)
	}
	apply(t, st, ban(9, 0), tn, room, later)
	fields, err := rdb.HKeys(t.Context(), Key(tn, room)).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(fields) != 2 || fields[0] == "b:7" || fields[1] == "b:7" {
		t.Fatalf("fields after the next decision: %v, want b:8 and b:9", fields)
	}
}

// A value Apply never writes is refused as corrupt, never read as "no ban".
func TestCorruptStateIsRefused(t *testing.T) {
	st, rdb, tn, room := fixture(t)
	for _, kv := range [][2]string{{"b:7", "soon"}, {"b:x", "0"}, {"q", "1"}} {
		if err := rdb.HSet(t.Context(), Key(tn, room), kv[0], kv[1]).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Load(t.Context(), tn, room, t0); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("field %s=%q: Load = %v, want ErrCorrupt", kv[0], kv[1], err)
		}
		rdb.HDel(t.Context(), Key(tn, room), kv[0])
	}
}

// The declared family matches the keys Key builds and nothing of a neighbouring layout.
func TestKeyFamily(t *testing.T) {
	fams := KeyFamilies()
	if err := fams[0].Validate(); err != nil {
		t.Fatal(err)
	}
	_, _, tn, room := fixture(t)
	if !fams[0].Match(Key(tn, room)) || fams[0].Match(KeyPrefix+"x:y") {
		t.Fatalf("family %s and key %s disagree", fams[0].Pattern, Key(tn, room))
	}
}
