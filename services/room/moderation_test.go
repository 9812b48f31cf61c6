package room

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/rpc"
	"github.com/qim-dev/qim/services/room/modstore"
)

func modCall(room []byte, action any) *internalv1.RoomModeration {
	m := &internalv1.RoomModeration{TenantId: tenantBytes(), RoomId: room}
	switch a := action.(type) {
	case *internalv1.RoomModeration_Ban:
		m.Action = a
	case *internalv1.RoomModeration_Unban:
		m.Action = a
	case *internalv1.RoomModeration_Kick:
		m.Action = a
	case *internalv1.RoomModeration_Mute:
		m.Action = a
	case *internalv1.RoomModeration_Unmute:
		m.Action = a
	case *internalv1.RoomModeration_SlowMode:
		m.Action = a
	case *internalv1.RoomModeration_RateLimit:
		m.Action = a
	case *internalv1.RoomModeration_Info:
		m.Action = a
	}
	return m
}

func mustModerate(t *testing.T, s *Service, m *internalv1.RoomModeration) *internalv1.RoomInfo {
	t.Helper()
	info, err := s.moderate(m)
	if err != nil {
		t.Fatalf("moderate: %v", err)
	}
	return info
}

func publishCode(t *testing.T, s *Service, in *internalv1.RoomPublish) (contract.ErrorCode, time.Duration) {
	t.Helper()
	_, wait, err := s.publish(context.Background(), in)
	return rpc.CodeOf(err), wait
}

// A ban removes the user's joined connections (a RoomRemoval on each link that held some, no
// leave expected), refuses its joins and publishes NOT_MEMBER, and other members stay.
func TestBanRemovesAndRefuses(t *testing.T) {
	s, _ := newTestService(t, nil)
	room := freshRoom()
	l := s.openLink()
	s.join(l, joinCall(1, room, 7, nil))
	s.join(l, joinCall(2, room, 7, nil)) // a second device of user 7
	s.join(l, joinCall(3, room, 8, nil))
	l.take(nil)
	info := mustModerate(t, s, modCall(room, &internalv1.RoomModeration_Ban{Ban: &internalv1.RoomUserAction{UserId: 7}}))
	if info.GetMembers() != 1 || info.GetConnections() != 1 || info.GetBans() != 1 {
		t.Fatalf("after the ban: %v", info)
	}
	items := l.take(nil)
	if len(items) != 1 || items[0].removal == nil || items[0].removal.GetUserId() != 7 ||
		contract.RoomLeftReason(items[0].removal.GetReason()) != contract.RoomLeftRemoved {
		t.Fatalf("link items after the ban: %+v", items)
	}
	s.join(l, joinCall(4, room, 7, nil))
	if items := l.take(nil); len(items) != 1 || contract.ErrorCode(items[0].answer.GetErrorCode()) != contract.ErrCodeNotMember {
		t.Fatalf("a banned user's join was answered %+v", items)
	}
	if code, _ := publishCode(t, s, publishOf(t, 7, room, 1, "x")); code != contract.ErrCodeNotMember {
		t.Fatalf("a banned user's publish: %s", code)
	}
	mustPublish(t, s, publishOf(t, 8, room, 1, "still here"))
}

// A mute refuses publishes, not reading; a timed one lapses; a retry of an event accepted
// before the mute is still answered with its ack.
func TestMuteRefusesPublishesOnly(t *testing.T) {
	s, clk := newTestService(t, nil)
	room := freshRoom()
	first := mustPublish(t, s, publishOf(t, 7, room, 1, "before"))
	mustModerate(t, s, modCall(room, &internalv1.RoomModeration_Mute{Mute: &internalv1.RoomUserAction{UserId: 7, DurationS: 10}}))
	if code, _ := publishCode(t, s, publishOf(t, 7, room, 2, "muted")); code != contract.ErrCodeNotMember {
		t.Fatalf("a muted publish: %s", code)
	}
	if again := mustPublish(t, s, publishOf(t, 7, room, 1, "before")); again.GetConversationSeq() != first.GetConversationSeq() {
		t.Fatalf("the retry of an accepted event got room_seq %d, want %d", again.GetConversationSeq(), first.GetConversationSeq())
	}
	clk.now = clk.now.Add(10 * time.Second)
	mustPublish(t, s, publishOf(t, 7, room, 3, "after the mute"))
}

// Slow mode admits one publish per member per interval and says how long to wait; the rate
// limit caps the room as a whole; a refused publish consumes no room_seq.
func TestSlowModeAndRateLimit(t *testing.T) {
	s, clk := newTestService(t, nil)
	room := freshRoom()
	mustModerate(t, s, modCall(room, &internalv1.RoomModeration_SlowMode{SlowMode: &internalv1.RoomSlowMode{IntervalMs: 2000}}))
	a := mustPublish(t, s, publishOf(t, 7, room, 1, "one"))
	clk.now = clk.now.Add(500 * time.Millisecond)
	if code, wait := publishCode(t, s, publishOf(t, 7, room, 2, "too soon")); code != contract.ErrCodeRateLimited || wait != 1500*time.Millisecond {
		t.Fatalf("slow mode: %s, wait %v", code, wait)
	}
	b := mustPublish(t, s, publishOf(t, 8, room, 1, "another member"))
	if b.GetConversationSeq() != a.GetConversationSeq()+1 {
		t.Fatalf("a refused publish consumed a room_seq: %d after %d", b.GetConversationSeq(), a.GetConversationSeq())
	}
	mustModerate(t, s, modCall(room, &internalv1.RoomModeration_SlowMode{SlowMode: &internalv1.RoomSlowMode{}}))
	mustModerate(t, s, modCall(room, &internalv1.RoomModeration_RateLimit{RateLimit: &internalv1.RoomRateLimit{EventsPerS: 2}}))
	for i := uint64(10); i < 12; i++ {
		mustPublish(t, s, publishOf(t, 9, room, i, "x"))
	}
	if code, wait := publishCode(t, s, publishOf(t, 9, room, 12, "x")); code != contract.ErrCodeRateLimited || wait != 500*time.Millisecond {
		t.Fatalf("rate limit: %s, wait %v", code, wait)
	}
	clk.now = clk.now.Add(500 * time.Millisecond)
	mustPublish(t, s, publishOf(t, 9, room, 12, "x"))
}

// The moderation is stored: a room dropped by the idle sweep, or a RoomWriter restarted (a
// new Service on the same core Redis), comes back with its bans, mutes, slow mode and rate
// limit; a timed mute still ends on time; an unban is stored too.
func TestModerationOutlivesTheRoom(t *testing.T) {
	s, clk := newTestService(t, nil)
	room := freshRoom()
	user := func(u uint64) *internalv1.RoomUserAction { return &internalv1.RoomUserAction{UserId: u} }
	mustModerate(t, s, modCall(room, &internalv1.RoomModeration_Ban{Ban: user(7)}))
	mustModerate(t, s, modCall(room, &internalv1.RoomModeration_Ban{Ban: user(6)}))
	mustModerate(t, s, modCall(room, &internalv1.RoomModeration_Unban{Unban: user(6)}))
	mustModerate(t, s, modCall(room, &internalv1.RoomModeration_Mute{Mute: &internalv1.RoomUserAction{UserId: 8, DurationS: 7200}}))
	mustModerate(t, s, modCall(room, &internalv1.RoomModeration_SlowMode{SlowMode: &internalv1.RoomSlowMode{IntervalMs: 60_000}}))
	mustModerate(t, s, modCall(room, &internalv1.RoomModeration_RateLimit{RateLimit: &internalv1.RoomRateLimit{EventsPerS: 5}}))
	clk.now = clk.now.Add(time.Hour)
	if n := s.rooms.sweep(clk.now); n != 1 {
		t.Fatalf("the sweep dropped %d rooms, want the idle moderated one", n)
	}
	s2, clk2 := newTestService(t, nil) // a restart: nothing in memory, the same core Redis
	clk2.now = clk.now
	for _, svc := range []*Service{s, s2} {
		info := mustModerate(t, svc, modCall(room, &internalv1.RoomModeration_Info{Info: true}))
		if info.GetBans() != 1 || info.GetMutes() != 1 || info.GetSlowModeMs() != 60_000 || info.GetRateLimitPerS() != 5 {
			t.Fatalf("the moderation after the room came back: %v", info)
		}
		if code, _ := publishCode(t, svc, publishOf(t, 7, room, 1, "x")); code != contract.ErrCodeNotMember {
			t.Fatalf("the ban was lifted: %s", code)
		}
		if code, _ := publishCode(t, svc, publishOf(t, 8, room, 1, "x")); code != contract.ErrCodeNotMember {
			t.Fatalf("the mute was lifted: %s", code)
		}
	}
	mustPublish(t, s2, publishOf(t, 6, room, 1, "unbanned"))
	clk2.now = clk2.now.Add(time.Hour)
	s3, clk3 := newTestService(t, nil)
	clk3.now = clk2.now
	mustPublish(t, s3, publishOf(t, 8, room, 2, "the mute ended"))
}

// A room whose moderation cannot be loaded decides nothing: joins and publishes are UNAVAILABLE
// (never admitted on a state that may lack a ban), and a decision that cannot be stored is
// refused and changes nothing in memory.
func TestUnreachableStoreFailsClosed(t *testing.T) {
	s, _ := newTestService(t, nil)
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { _ = dead.Close() })
	loaded, room := freshRoom(), freshRoom()
	mustPublish(t, s, publishOf(t, 7, loaded, 1, "loaded"))
	s.mods = modstore.New(dead)
	if code, _ := publishCode(t, s, publishOf(t, 7, room, 1, "x")); code != contract.ErrCodeUnavailable {
		t.Fatalf("a publish into a room whose moderation did not load: %s, want UNAVAILABLE", code)
	}
	l := s.openLink()
	s.join(l, joinCall(1, room, 7, nil))
	if items := l.take(nil); len(items) != 1 || contract.ErrorCode(items[0].answer.GetErrorCode()) != contract.ErrCodeUnavailable {
		t.Fatalf("a join into a room whose moderation did not load: %+v", items)
	}
	if _, err := s.moderate(modCall(loaded, &internalv1.RoomModeration_Ban{Ban: &internalv1.RoomUserAction{UserId: 7}})); rpc.CodeOf(err) != contract.ErrCodeUnavailable {
		t.Fatalf("a ban that could not be stored: %v, want UNAVAILABLE", err)
	}
	mustPublish(t, s, publishOf(t, 7, loaded, 2, "not banned"))
	if _, err := s.moderate(modCall(loaded, &internalv1.RoomModeration_Ban{})); rpc.CodeOf(err) != contract.ErrCodeInvalidArgument {
		t.Fatalf("a ban without a user: %v, want INVALID_ARGUMENT", err)
	}
}

// Slow mode's last posts are not stored, so a room is kept while one may still hold a member
// back: the sweep waits out the longer of the buffer age and the interval.
func TestSlowModeRoomOutlivesItsInterval(t *testing.T) {
	s, clk := newTestService(t, func(c *Config) { c.BufferAge = time.Second })
	room := freshRoom()
	mustModerate(t, s, modCall(room, &internalv1.RoomModeration_SlowMode{SlowMode: &internalv1.RoomSlowMode{IntervalMs: 60_000}}))
	mustPublish(t, s, publishOf(t, 7, room, 1, "x"))
	clk.now = clk.now.Add(30 * time.Second)
	if n := s.rooms.sweep(clk.now); n != 0 {
		t.Fatalf("the sweep dropped a room whose member is within its slow-mode interval")
	}
	if code, _ := publishCode(t, s, publishOf(t, 7, room, 2, "x")); code != contract.ErrCodeRateLimited {
		t.Fatalf("slow mode after a sweep: %s, want RATE_LIMITED", code)
	}
	clk.now = clk.now.Add(31 * time.Second)
	if n := s.rooms.sweep(clk.now); n != 1 {
		t.Fatalf("the sweep kept a room past its interval: dropped %d", n)
	}
}
