package room

import (
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/rpc"
)

func modCall(room []byte, action any) *internalv1.RoomModeration {
	m := &internalv1.RoomModeration{TenantId: tenantBytes(), RoomId: room}
	switch a := action.(type) {
	case *internalv1.RoomModeration_Ban:
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
	_, wait, err := s.publish(in)
	return rpc.CodeOf(err), wait
}

// A ban removes the user's joined connections (a RoomRemoval on each link that held some, no
// leave expected), refuses its joins and publishes NOT_MEMBER, and other members stay.
func TestBanRemovesAndRefuses(t *testing.T) {
	s, _ := newTestService(t, nil)
	room := roomBytes(1)
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
	room := roomBytes(2)
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
	room := roomBytes(3)
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

// A moderated room outlives the idle sweep (dropping it would lift the ban); info counts
// members and connections.
func TestModeratedRoomIsNotSwept(t *testing.T) {
	s, clk := newTestService(t, nil)
	room := roomBytes(4)
	mustModerate(t, s, modCall(room, &internalv1.RoomModeration_Ban{Ban: &internalv1.RoomUserAction{UserId: 7}}))
	clk.now = clk.now.Add(time.Hour)
	if n := s.rooms.sweep(clk.now); n != 0 {
		t.Fatalf("the sweep dropped %d moderated rooms", n)
	}
	if code, _ := publishCode(t, s, publishOf(t, 7, room, 1, "x")); code != contract.ErrCodeNotMember {
		t.Fatalf("the ban was lifted by time alone: %s", code)
	}
}
