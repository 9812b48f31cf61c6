package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/sdk"
)

func TestParseJoin(t *testing.T) {
	tests := []struct{ in, want string }{
		{"2a", "0000000000000000000000000000002a live"},
		{"0x2A 0", "0000000000000000000000000000002a from 0"},
		{" 2a   1932735283200000001 ", "0000000000000000000000000000002a from 1932735283200000001"},
		{"", "error"},
		{"0", "error"},     // a zero room id
		{"2a x", "error"},  // FROM is decimal
		{"2a -1", "error"}, // and not negative
		{"2a 1 2", "error"},
		{strings.Repeat("f", 33), "error"},
	}
	for _, tc := range tests {
		room, opts, err := parseJoin(tc.in)
		got := "error"
		if err == nil {
			got = room.String() + " live"
			if opts.Replay {
				got = fmt.Sprintf("%s from %d", room, opts.ReplayFrom)
			}
		}
		if got != tc.want {
			t.Errorf("parseJoin(%q) = %s (%v), want %s", tc.in, got, err, tc.want)
		}
	}
}

func TestMatchRoom(t *testing.T) {
	long1, _ := sdk.ParseRoomID("123456789abc0000000000000000001")
	long2, _ := sdk.ParseRoomID("123456789abd0000000000000000002")
	small := contract.U128{Lo: 0x2a}
	joined := []sdk.RoomInfo{{Room: small, Joined: true}, {Room: long1}, {Room: long2}}
	tests := []struct {
		arg    string
		want   contract.U128
		joined bool
		err    string
	}{
		{"2a", small, true, ""},
		{"0x002A", small, true, ""},
		{"2", contract.U128{Lo: 2}, false, ""}, // a whole id, not the start of 2a
		{"123456789abc", long1, true, ""},
		{"12345678", contract.U128{}, false, "2 joined rooms"},
		{"3b", contract.U128{Lo: 0x3b}, false, ""}, // not joined: /room may still publish to it
		{"zz", contract.U128{}, false, "hex"},
		{"0", contract.U128{}, false, "zero"},
		{"", contract.U128{}, false, "no room"},
	}
	for _, tc := range tests {
		got, j, err := matchRoom(tc.arg, joined)
		if got != tc.want || j != tc.joined || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("matchRoom(%q) = %s, %v, %v; want %s, %v, %q", tc.arg, got, j, err, tc.want, tc.joined, tc.err)
		}
	}
}

func TestDescribeRooms(t *testing.T) {
	room := contract.U128{Lo: 0x2a}
	lines := describeRoomEvents(7, sdk.RoomEvents{Room: room, Gap: &sdk.RoomGap{After: 10, Next: 13}, Events: []sdk.RoomEvent{
		{RoomSeq: 13, Sender: 1002, Type: contract.MessageText, Body: []byte("hi\x1b[2J")},
		{RoomSeq: 14, Sender: 7, Type: contract.MessageText, Body: []byte("me")},
		{RoomSeq: 15, Sender: 0, Type: contract.MessageCustom, CustomType: "gift"},
	}})
	want := []string{
		"[room 2a] gap after #10: 2 events not received (next is #13)",
		"[room 2a #13] 1002: hi?[2J",
		"[room 2a #14] you: me",
		"[room 2a #15] system: <CUSTOM gift>",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	restart := describeRoomEvents(7, sdk.RoomEvents{Room: room, Gap: &sdk.RoomGap{After: 5, Next: contract.RoomSeqBase(1_800_000_000) + 1}})
	if len(restart) != 1 || !strings.Contains(restart[0], "the room's server restarted") {
		t.Errorf("epoch jump rendered %q", restart)
	}
	others := []struct {
		got, want string
	}{
		{describeRoomJoined(sdk.RoomJoined{Room: room, RoomSeq: 41}), "[room 2a] joined at #41"},
		{describeRoomJoined(sdk.RoomJoined{Room: room, RoomSeq: 41, Rejoin: true, ReplayTruncated: true}),
			"[room 2a] rejoined at #41; the replay could not start where asked: earlier events are lost"},
		{describeRoomLeft(sdk.RoomLeft{Room: room, Reason: contract.RoomLeftRequested}), "[room 2a] left"},
		{describeRoomLeft(sdk.RoomLeft{Room: room, Reason: contract.RoomLeftSlowConsumer, Rejoining: true}),
			"[room 2a] dropped by the server (SLOW_CONSUMER); rejoining"},
		{describeRoomLeft(sdk.RoomLeft{Room: room, Reason: contract.RoomLeftRemoved}), "[room 2a] you were removed from the room"},
		{describeRoomLeft(sdk.RoomLeft{Room: room, Reason: contract.RoomLeftClosed}), "[room 2a] the room was closed"},
		{describeRoomLeft(sdk.RoomLeft{Room: room, Reason: contract.RoomLeftRemoved, Err: errors.New("banned")}),
			"[room 2a] left: the server refused to take you back (banned)"},
		{roomError(&sdk.ServerError{Op: contract.OpSend, Code: contract.ErrCodeRateLimited, RetryAfter: 29600 * time.Millisecond}),
			"slow down: the room takes your next message in 30s"},
		{roomError(&sdk.ServerError{Op: contract.OpJoinRoom, Code: contract.ErrCodeRateLimited}),
			"in too many rooms (at most 16): /leave one first"},
		{roomError(&sdk.ServerError{Op: contract.OpSend, Code: contract.ErrCodeNotMember}), "you are banned from that room, or muted in it"},
	}
	for _, tc := range others {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// Offline, the room commands answer at once: the help names them, /rooms lists none, /join and
// /room need the connection, and /leave of a room not joined falls through to the groups.
func TestRoomCommandsOffline(t *testing.T) {
	cmd, stdin, out := startDesktop(t, "127.0.0.1:1")
	if _, err := stdin.WriteString("/help\n/rooms\n/join 2a 5\n/room 2a hello\n/join\n/leave 2a\n/quit\n"); err != nil {
		t.Fatal(err)
	}
	waitExit(t, cmd, 10*time.Second, out)
	o := out.String()
	for _, want := range []string{"/join ROOM [FROM]", "0 rooms:", "error: not connected (/login first)",
		"usage: /join ROOM [FROM]", "usage: /leave GROUP|ROOM"} {
		if !strings.Contains(o, want) {
			t.Errorf("output lacks %q:\n%s", want, o)
		}
	}
	if n := strings.Count(o, "error: not connected"); n != 2 {
		t.Errorf("%d 'not connected' errors, want 2 (/join and /room):\n%s", n, o)
	}
}

// A send the moderation hook rejected shows the hook's reason; other failures their error.
func TestDescribeFailed(t *testing.T) {
	rejected := sdk.Failed{Code: contract.ErrCodeRejected, Err: &sdk.ServerError{Op: contract.OpSend, Code: contract.ErrCodeRejected,
		Message: "refused by the moderation hook: spam", Reason: "spam"}}
	if got := describeFailed(rejected); !strings.HasPrefix(got, "[rejected] ") || !strings.HasSuffix(got, ": spam") {
		t.Errorf("rejected send rendered %q", got)
	}
	other := sdk.Failed{Code: contract.ErrCodeConflict, Err: &sdk.ServerError{Op: contract.OpSend, Code: contract.ErrCodeConflict, Message: "reused id"}}
	if got := describeFailed(other); !strings.HasPrefix(got, "[failed] ") || !strings.Contains(got, "reused id") {
		t.Errorf("conflict rendered %q", got)
	}
}
