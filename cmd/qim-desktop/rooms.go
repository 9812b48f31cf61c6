package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/sdk"
)

// Room commands. A ROOM argument is a room id in hex like every id the client prints (1 to 32
// digits, leading zeros optional: rooms are usually small numbers an app chose), or the start of
// a room this client has joined. Rooms are live only: nothing of them is stored, so /history,
// /convs and /read never show them, and a restart forgets them.

// roomSendTimeout bounds /room: a send waits for its ack, and across a reconnect for the next
// connection; the command loop must not wait longer than a user would.
const roomSendTimeout = 15 * time.Second

func cmdJoin(ctx context.Context, c *sdk.Client, con *console, rest string) {
	room, opts, err := parseJoin(rest)
	if err != nil {
		con.printf("usage: /join ROOM [FROM] (%v)", err)
		return
	}
	if _, err := c.JoinRoom(ctx, room, opts); err != nil {
		con.printf("error: %s", roomError(err))
	} // success is printed from the RoomJoined event
}

// parseJoin reads "ROOM [FROM]": FROM asks for a replay from that room_seq (0: all the server
// still holds).
func parseJoin(rest string) (contract.U128, sdk.RoomJoinOptions, error) {
	fields := strings.Fields(rest)
	if len(fields) == 0 || len(fields) > 2 {
		return contract.U128{}, sdk.RoomJoinOptions{}, errors.New("give a room id and at most a room_seq")
	}
	room, err := sdk.ParseRoomID(fields[0])
	if err != nil {
		return contract.U128{}, sdk.RoomJoinOptions{}, err
	}
	var opts sdk.RoomJoinOptions
	if len(fields) == 2 {
		from, err := strconv.ParseUint(fields[1], 10, 64)
		if err != nil {
			return contract.U128{}, sdk.RoomJoinOptions{}, fmt.Errorf("FROM must be a decimal room_seq, got %q", fields[1])
		}
		opts = sdk.RoomJoinOptions{Replay: true, ReplayFrom: from}
	}
	return room, opts, nil
}

func cmdRoom(ctx context.Context, c *sdk.Client, con *console, rest string) {
	arg, text, ok := strings.Cut(rest, " ")
	if !ok || strings.TrimSpace(text) == "" {
		con.printf("usage: /room ROOM TEXT")
		return
	}
	room, _, err := matchRoom(arg, c.Rooms())
	if err != nil {
		con.printf("usage: /room ROOM TEXT (%v)", err)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, roomSendTimeout)
	defer cancel()
	ack, err := c.SendRoom(ctx, room, []byte(text), sdk.SendOptions{})
	if err != nil {
		con.printf("error: %s", roomError(err))
		return
	}
	con.printf("[room %s] sent as #%d", roomLabel(room), ack.RoomSeq)
}

// cmdLeave leaves a joined room, or else a group: both are "/leave".
func cmdLeave(ctx context.Context, c *sdk.Client, con *console, rest string) {
	if room, joined, err := matchRoom(rest, c.Rooms()); err == nil && joined {
		if err := c.LeaveRoom(ctx, room); err != nil {
			con.printf("error: %s", roomError(err))
		} // RoomLeft prints the outcome
		return
	}
	cmdLeaveGroup(ctx, c, con, rest)
}

func cmdRooms(c *sdk.Client, con *console) {
	rooms := c.Rooms()
	con.printf("%d rooms:", len(rooms))
	for _, r := range rooms {
		state := "joined"
		if !r.Joined {
			state = "waiting to rejoin" // offline, or the server dropped it a moment ago
		}
		con.printf("  room %s: at #%d (%s)", roomLabel(r.Room), r.RoomSeq, state)
	}
}

// roomPrefixMin is the shortest start of a joined room's id that names it: shorter arguments
// are whole ids, so a small room ("2") is never mistaken for the start of a joined one ("2a").
const roomPrefixMin = 8

// matchRoom resolves a ROOM argument: a joined room with that id, else the one joined room whose
// printed id starts with it (roomPrefixMin digits or more), else the room the argument names
// (joined false).
func matchRoom(arg string, rooms []sdk.RoomInfo) (contract.U128, bool, error) {
	arg = strings.ToLower(strings.TrimPrefix(strings.TrimSpace(arg), "0x"))
	if arg == "" {
		return contract.U128{}, false, errors.New("no room given")
	}
	id, parseErr := sdk.ParseRoomID(arg)
	want, _ := contract.RoomConversationID(id)
	prefix := strings.TrimLeft(arg, "0")
	var found []contract.U128
	for _, r := range rooms {
		if key, _ := contract.RoomConversationID(r.Room); parseErr == nil && key == want {
			return r.Room, true, nil
		}
		if len(prefix) >= roomPrefixMin && strings.HasPrefix(roomLabel(r.Room), prefix) {
			found = append(found, r.Room)
		}
	}
	switch {
	case len(found) == 1:
		return found[0], true, nil
	case len(found) > 1:
		return contract.U128{}, false, fmt.Errorf("%d joined rooms start with %q; give more digits", len(found), arg)
	case parseErr != nil:
		return contract.U128{}, false, parseErr
	}
	return id, false, nil
}

// roomLabel prints a room id in hex without leading zeros ("2a"); sdk.ParseRoomID reads it back.
func roomLabel(u contract.U128) string {
	if s := strings.TrimLeft(u.String(), "0"); s != "" {
		return s
	}
	return "0"
}

// roomError says what the user can do about the refusals a room command meets.
func roomError(err error) string {
	var se *sdk.ServerError
	switch {
	case errors.Is(err, sdk.ErrOffline):
		return "not connected (/login first)"
	case errors.Is(err, sdk.ErrRoomJoined):
		return "already in that room"
	case errors.Is(err, sdk.ErrTooManyRooms):
		return fmt.Sprintf("in too many rooms (at most %d): /leave one first", contract.MaxJoinedRoomsPerConnection)
	case errors.Is(err, sdk.ErrUnimplemented):
		return "this server has no rooms"
	case errors.Is(err, sdk.ErrNotMember):
		return "you are banned from that room, or muted in it"
	case errors.As(err, &se) && se.Code == contract.ErrCodeRateLimited:
		return fmt.Sprintf("slow down: the room takes your next message in %v", se.RetryAfter.Round(time.Second))
	case errors.Is(err, context.DeadlineExceeded):
		return "no answer in time; the message may or may not have reached the room"
	}
	return err.Error()
}

// describeRoomJoined renders RoomJoined: "[room 2a] joined at #41".
func describeRoomJoined(e sdk.RoomJoined) string {
	verb := "joined"
	if e.Rejoin {
		verb = "rejoined"
	}
	line := fmt.Sprintf("[room %s] %s at #%d", roomLabel(e.Room), verb, e.RoomSeq)
	if e.ReplayTruncated {
		line += "; the replay could not start where asked: earlier events are lost"
	}
	return line
}

// describeRoomEvents renders a batch: the gap first, then "[room 2a #42] 1002: hello" per event.
func describeRoomEvents(self contract.UserID, e sdk.RoomEvents) []string {
	label := roomLabel(e.Room)
	var out []string
	if g := e.Gap; g != nil {
		what := fmt.Sprintf("%d events not received", g.Lost())
		if g.Lost() >= 1<<contract.RoomSeqEpochShift {
			what = "the room's server restarted; events in between are lost"
		}
		out = append(out, fmt.Sprintf("[room %s] gap after #%d: %s (next is #%d)", label, g.After, what, g.Next))
	}
	for _, ev := range e.Events {
		who := strconv.FormatUint(uint64(ev.Sender), 10)
		switch ev.Sender {
		case self:
			who = "you"
		case 0:
			who = "system"
		}
		text := printable(ev.Body)
		if ev.Type != contract.MessageText {
			text = "<" + ev.Type.String() + " " + printable([]byte(ev.CustomType)) + ">"
		}
		out = append(out, fmt.Sprintf("[room %s #%d] %s: %s", label, ev.RoomSeq, who, text))
	}
	return out
}

// describeRoomLeft renders RoomLeft with what happens next.
func describeRoomLeft(e sdk.RoomLeft) string {
	label := roomLabel(e.Room)
	switch {
	case e.Err != nil:
		return fmt.Sprintf("[room %s] left: the server refused to take you back (%v)", label, e.Err)
	case e.Rejoining:
		return fmt.Sprintf("[room %s] dropped by the server (%s); rejoining", label, e.Reason)
	case e.Reason == contract.RoomLeftRequested:
		return fmt.Sprintf("[room %s] left", label)
	case e.Reason == contract.RoomLeftRemoved:
		return fmt.Sprintf("[room %s] you were removed from the room", label)
	case e.Reason == contract.RoomLeftClosed:
		return fmt.Sprintf("[room %s] the room was closed", label)
	}
	return fmt.Sprintf("[room %s] left (%s)", label, e.Reason)
}
