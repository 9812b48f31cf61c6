package admin

import (
	"net"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// Every room call reaches the RoomWriter that contract.RoomOwner picks for the room's canonical
// id — the instance the gateways send the room to — and no other one, for moderation and info
// alike, whatever the tenant.
func TestRoomCallsReachTheirOwner(t *testing.T) {
	st := startRoomWriters(t, 2)
	f := st.fixture(t, st.addrs)
	seen := map[int]bool{}
	for _, tenant := range []contract.TenantID{{}, {Lo: 42}} {
		for n := range uint64(8) {
			id := contract.U128{Hi: n << 16, Lo: n + 1} // no kind bits: the owner is found by the canonical id
			conv, _ := contract.RoomConversationID(id)
			want := contract.RoomOwner(tenant, conv, st.addrs)
			before := st.counts()
			var status int
			var out map[string]any
			if n%2 == 0 {
				status, out = f.call(t, http.MethodGet, "/v1/rooms?tenant="+tenant.String()+"&room="+id.String(), roomsKey, "")
			} else {
				status, out = f.call(t, http.MethodPost, "/v1/rooms/moderation", roomsKey,
					`{"tenant": "`+tenant.String()+`", "room": "`+id.String()+`", "action": "kick", "user": 7}`)
			}
			before[want]++
			if status != 200 || out["room_seq"] != float64(seqOf(want)) || !slices.Equal(st.counts(), before) {
				t.Fatalf("tenant %s room %s: %d %v, calls %v; want the answer of instance %d only", tenant, id, status, out, st.counts(), want)
			}
			seen[want] = true
		}
	}
	if len(seen) != 2 {
		t.Fatalf("the rooms tried all had one owner (%v): the test proves nothing", seen)
	}
}

// Each action becomes its RoomModeration oneof with the user, duration, interval or rate, for
// the tenant and room asked; the answer is the room's info; the audit log names room, action
// and user.
func TestRoomModerationMapsActions(t *testing.T) {
	st := startRoomWriters(t, 1)
	f := st.fixture(t, st.addrs)
	const room, tenant = "0000000000000000000000000000beef", "0000000000000000000000000000002a"
	st.fakes[0].answer(&internalv1.RoomModerationOutcome{Info: &internalv1.RoomInfo{RoomSeq: 99, Members: 3, Connections: 5,
		BufferedEvents: 4, SlowModeMs: 5000, RateLimitPerS: 20, Bans: 1, Mutes: 2}})
	user := func(u uint64, d uint32) *internalv1.RoomUserAction {
		return &internalv1.RoomUserAction{UserId: u, DurationS: d}
	}
	cases := []struct {
		body string
		want *internalv1.RoomModeration
	}{
		{`"action": "ban", "user": 7, "duration_s": 600`, &internalv1.RoomModeration{Action: &internalv1.RoomModeration_Ban{Ban: user(7, 600)}}},
		{`"action": "ban", "user": 8`, &internalv1.RoomModeration{Action: &internalv1.RoomModeration_Ban{Ban: user(8, 0)}}},
		{`"action": "unban", "user": 7`, &internalv1.RoomModeration{Action: &internalv1.RoomModeration_Unban{Unban: user(7, 0)}}},
		{`"action": "kick", "user": 9`, &internalv1.RoomModeration{Action: &internalv1.RoomModeration_Kick{Kick: user(9, 0)}}},
		{`"action": "mute", "user": 7, "duration_s": 60`, &internalv1.RoomModeration{Action: &internalv1.RoomModeration_Mute{Mute: user(7, 60)}}},
		{`"action": "unmute", "user": 7`, &internalv1.RoomModeration{Action: &internalv1.RoomModeration_Unmute{Unmute: user(7, 0)}}},
		{`"action": "slow_mode", "interval_ms": 5000`, &internalv1.RoomModeration{Action: &internalv1.RoomModeration_SlowMode{SlowMode: &internalv1.RoomSlowMode{IntervalMs: 5000}}}},
		{`"action": "slow_mode"`, &internalv1.RoomModeration{Action: &internalv1.RoomModeration_SlowMode{SlowMode: &internalv1.RoomSlowMode{}}}},
		{`"action": "rate_limit", "events_per_s": 20`, &internalv1.RoomModeration{Action: &internalv1.RoomModeration_RateLimit{RateLimit: &internalv1.RoomRateLimit{EventsPerS: 20}}}},
		{`"action": "rate_limit", "events_per_s": 0`, &internalv1.RoomModeration{Action: &internalv1.RoomModeration_RateLimit{RateLimit: &internalv1.RoomRateLimit{}}}},
	}
	wantInfo := map[string]any{"room": room, "room_seq": 99.0, "members": 3.0, "online": 5.0, "buffered_events": 4.0,
		"slow_mode_ms": 5000.0, "rate_limit_per_s": 20.0, "bans": 1.0, "mutes": 2.0}
	for i, c := range cases {
		status, out := f.call(t, http.MethodPost, "/v1/rooms/moderation", roomsKey, `{"tenant": "`+tenant+`", "room": "`+room+`", `+c.body+`}`)
		c.want.TenantId, c.want.RoomId = contract.U128{Lo: 0x2a}.AppendBytes(nil), contract.U128{Lo: 0xbeef}.AppendBytes(nil)
		if got := st.fakes[0].calls(); status != 200 || len(got) != i+1 || !proto.Equal(got[i], c.want) {
			t.Fatalf("%s: %d, sent %v, want %v", c.body, status, got[len(got)-1], c.want)
		}
		if !reflect.DeepEqual(out, wantInfo) {
			t.Fatalf("%s: answered %v, want %v", c.body, out, wantInfo)
		}
	}
	status, out := f.call(t, http.MethodGet, "/v1/rooms?room="+room, roomsKey, "")
	got := st.fakes[0].calls()
	want := &internalv1.RoomModeration{TenantId: make([]byte, 16), RoomId: contract.U128{Lo: 0xbeef}.AppendBytes(nil),
		Action: &internalv1.RoomModeration_Info{Info: true}}
	if status != 200 || !proto.Equal(got[len(got)-1], want) || !reflect.DeepEqual(out, wantInfo) {
		t.Fatalf("info: %d %v, sent %v", status, out, got[len(got)-1])
	}
	log := f.audit.String()
	for _, w := range []string{"key=rooms", "route=/v1/rooms/moderation", "room=" + room, "action=ban", "user=7", "action=info"} {
		if !strings.Contains(log, w) {
			t.Errorf("audit log lacks %q:\n%s", w, log)
		}
	}
}

// Malformed requests are 400 before any RoomWriter call, a key without scope rooms is 403, the
// RoomWriter's refusals map as the group routes map the writer's, and without QIM_ROOM_ADDRS
// the routes are 404.
func TestRoomRoutesRefuse(t *testing.T) {
	const room = "0000000000000000000000000000beef"
	off := newFixture(t, false)
	if status, _ := off.call(t, http.MethodPost, "/v1/rooms/moderation", roomsKey, `{"room": "`+room+`", "action": "kick", "user": 7}`); status != 404 {
		t.Fatalf("moderation without QIM_ROOM_ADDRS: %d, want 404", status)
	}
	if status, _ := off.call(t, http.MethodGet, "/v1/rooms?room="+room, roomsKey, ""); status != 404 {
		t.Fatalf("info without QIM_ROOM_ADDRS: %d, want 404", status)
	}
	st := startRoomWriters(t, 1)
	f := st.fixture(t, st.addrs)
	if status, _ := f.call(t, http.MethodPost, "/v1/rooms/moderation", groupsKey, `{"room": "`+room+`", "action": "kick", "user": 7}`); status != 403 {
		t.Fatalf("moderation with a groups key: %d, want 403", status)
	}
	if status, _ := f.call(t, http.MethodGet, "/v1/rooms?room="+room, groupsKey, ""); status != 403 {
		t.Fatalf("info with a groups key: %d, want 403", status)
	}
	for _, bad := range []string{`"action": "silence", "user": 7`, `"action": "ban"`, `"action": "kick", "user": 7, "duration_s": 60`,
		`"action": "slow_mode", "user": 7, "interval_ms": 1000`, `"action": "rate_limit", "interval_ms": 5`,
		`"action": "mute", "user": 7, "events_per_s": 5`, `"action": "kick", "user": 7, "reason": "spam"`, `"action": "kick", "user": 7, "tenant": "xyz"`} {
		if status, out := f.call(t, http.MethodPost, "/v1/rooms/moderation", roomsKey, `{"room": "`+room+`", `+bad+`}`); status != 400 || out["error"] == nil {
			t.Errorf("%s: %d %v, want 400", bad, status, out)
		}
	}
	for _, q := range []string{"", "?room=zz", "?room=00000000000000000000000000000000", "?room=" + room + "&user=7"} {
		if status, _ := f.call(t, http.MethodGet, "/v1/rooms"+q, roomsKey, ""); status != 400 {
			t.Errorf("GET /v1/rooms%s: %d, want 400", q, status)
		}
	}
	if n := len(st.fakes[0].calls()); n != 0 {
		t.Fatalf("refused requests reached the RoomWriter %d times", n)
	}
	for _, c := range []struct {
		code contract.ErrorCode
		want int
	}{{contract.ErrCodeInvalidArgument, 400}, {contract.ErrCodeNotMember, 404}, {contract.ErrCodeConflict, 409}, {contract.ErrCodeUnavailable, 503}} {
		st.fakes[0].answer(&internalv1.RoomModerationOutcome{ErrorCode: uint32(c.code), ErrorMessage: "no"})
		if status, _ := f.call(t, http.MethodPost, "/v1/rooms/moderation", roomsKey, `{"room": "`+room+`", "action": "kick", "user": 7}`); status != c.want {
			t.Errorf("RoomWriter refusal %s: %d, want %d", c.code, status, c.want)
		}
	}
}

// An owner that does not answer is a 503 for its rooms, with no fallback to the instance that
// does; that instance still serves the rooms it owns.
func TestRoomOwnerDownIsUnavailable(t *testing.T) {
	st := startRoomWriters(t, 1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	_ = ln.Close()
	addrs := []string{st.addrs[0], dead}
	f := st.fixture(t, addrs)
	down, up := roomOwnedBy(t, contract.TenantID{}, addrs, 1), roomOwnedBy(t, contract.TenantID{}, addrs, 0)
	if status, out := f.call(t, http.MethodPost, "/v1/rooms/moderation", roomsKey, `{"room": "`+down.String()+`", "action": "ban", "user": 7}`); status != 503 {
		t.Fatalf("ban in a room whose owner is down: %d %v, want 503", status, out)
	}
	if n := len(st.fakes[0].calls()); n != 0 {
		t.Fatalf("the ban fell back to another RoomWriter (%d calls)", n)
	}
	if status, _ := f.call(t, http.MethodGet, "/v1/rooms?room="+up.String(), roomsKey, ""); status != 200 {
		t.Fatalf("info of a room whose owner is up: %d, want 200", status)
	}
}
