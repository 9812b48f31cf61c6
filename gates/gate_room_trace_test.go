package gates

import (
	"errors"
	"testing"

	"github.com/qim-dev/qim/gates/keyspace"
)

// The room-trace check fails on a room in Redis, on an unreadable member, and whenever it would
// prove nothing: no room events published, no conversation read, the RoomWriters unreachable.
func TestRoomTraceCheck(t *testing.T) {
	tests := []struct {
		name       string
		convs      int64
		rooms      int64
		unreadable int64
		published  float64
		err        error
		pass       bool
	}{
		{"clean", 40, 0, 0, 12, nil, true},
		{"a room in Redis", 40, 1, 0, 12, nil, false},
		{"an unreadable member", 40, 0, 1, 12, nil, false},
		{"no room events published", 40, 0, 0, 0, nil, false},
		{"no conversation read", 0, 0, 0, 12, nil, false},
		{"RoomWriters unreachable", 40, 0, 0, 0, errors.New("connection refused"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &keyspace.Family{Conversations: tc.convs, Rooms: tc.rooms, Unreadable: tc.unreadable}
			if tc.rooms > 0 {
				f.RoomKeys = []string{"qim:cseq:{b001}:…"}
			}
			r := &Result{}
			roomTraceCheck(r, []*keyspace.Inventory{{Families: []*keyspace.Family{f}}}, tc.published, tc.err)
			if len(r.Checks) != 1 || r.Checks[0].Passed != tc.pass {
				t.Fatalf("checks %+v, want one passing=%v", r.Checks, tc.pass)
			}
		})
	}
}
