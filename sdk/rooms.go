package sdk

// The room API (ADR-0034): live broadcast channels with a short replay window. Rooms are the
// opposite of conversations on purpose: nothing of a room is stored, counted as unread or marked
// read, a room send is not durable (it is sent now, retried with the same client_message_id
// while the call lasts, never recorded as pending), and memberships belong to the connection.
// The SDK keeps the joined set in memory for the Client's lifetime and rejoins it after every
// reconnect, replaying from the last room_seq it delivered (roomstate.go, roomengine.go).

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// RoomJoinOptions choose where a JoinRoom starts.
type RoomJoinOptions struct {
	// Replay asks for the events the room's buffer still holds with room_seq >= ReplayFrom
	// before the live ones (ReplayFrom 0 = the whole buffer); false = live events only.
	// RoomJoined.ReplayTruncated reports a start the buffer no longer holds.
	Replay     bool
	ReplayFrom uint64
}

// RoomAck is a room send the server accepted: the event is in the room's buffer and queued for
// broadcast, which is not durable (the room's server keeps no copy across a restart).
type RoomAck struct {
	Room            contract.U128
	ClientMessageID contract.ClientMessageID
	RoomSeq         uint64 // the event's position in the room
	SentAtMs        int64  // the event's publish time
}

// JoinRoom subscribes this connection to a room (JOIN_ROOM) and returns once the server has
// answered; RoomJoined is also emitted, before any of the room's RoomEvents. The room then stays
// joined until LeaveRoom or a RoomLeft without Rejoining: the SDK rejoins it by itself after a
// reconnect. A room id is any non-zero u128 the app chooses; the server ignores its top 4 bits
// (it puts the ROOM kind there), so two ids that differ only in them are one room. Errors:
// ErrOffline without an authenticated connection, ErrRoomJoined, ErrTooManyRooms
// (contract.MaxJoinedRoomsPerConnection), ErrInvalid for a zero id, ErrNotMember when banned from
// the room, ErrUnimplemented on a deployment without rooms, a retryable *ServerError UNAVAILABLE
// while the room's server is down. A call that returns its context's error may still join:
// RoomJoined tells, LeaveRoom undoes it.
func (c *Client) JoinRoom(ctx context.Context, room contract.U128, opts RoomJoinOptions) (RoomJoined, error) {
	key, err := roomKey(room)
	if err != nil {
		return RoomJoined{}, err
	}
	r, err := c.roomCall(ctx, &roomCmd{op: roomJoinOp, room: room, key: key, opts: opts})
	return r.joined, err
}

// LeaveRoom leaves a room (LEAVE_ROOM) and forgets it: the SDK will not rejoin it, and events of
// it still in flight are dropped. It returns once the server answered, or at once when there is
// no live membership to end (offline, or a room not joined, which is not an error). RoomLeft
// REQUESTED is emitted for a room that was in the joined set.
func (c *Client) LeaveRoom(ctx context.Context, room contract.U128) error {
	key, err := roomKey(room)
	if err != nil {
		return err
	}
	// The first loop that ends under the call hands the set back to the caller: the second
	// attempt then leaves offline.
	for attempt := 0; ; attempt++ {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return ErrClosed
		}
		if !c.loopRunning() {
			c.forgetRoomOffline(key)
			c.mu.Unlock()
			return nil
		}
		c.mu.Unlock()
		_, err := c.roomCall(ctx, &roomCmd{op: roomLeaveOp, room: room, key: key})
		if !errors.Is(err, ErrOffline) || attempt > 0 {
			return err
		}
	}
}

// SendRoom publishes body into a room and returns the server's ack (SEND with the room_id
// target). The sender need not be joined. The send is not durable: it goes out now with a fresh
// client_message_id and is never recorded as pending; after a retryable refusal or a lost
// connection it is sent again with the same id (the server answers a retry of a buffered event
// with the original ack) until ctx ends. Errors: ErrOffline when the client is not connected (or
// is disconnected meanwhile), ctx's error when it ended first — in both cases the event may have
// been published — and the server's refusal as a *ServerError: ErrNotMember when banned or muted
// in the room, RATE_LIMITED with RetryAfter in slow mode or above the room's rate (not retried).
func (c *Client) SendRoom(ctx context.Context, room contract.U128, body []byte, opts SendOptions) (RoomAck, error) {
	key, err := roomKey(room)
	if err != nil {
		return RoomAck{}, err
	}
	if opts, err = checkSend(body, opts); err != nil {
		return RoomAck{}, err
	}
	s := newRoomSend(ctx, room, key, body, opts, time.Now())
	r, err := c.roomCall(ctx, &roomCmd{op: roomSendOp, room: room, key: key, send: s})
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return RoomAck{}, fmt.Errorf("sdk: room send %s not acknowledged: %w", contract.U128(s.cmid), err)
	}
	return r.ack, err
}

// newRoomSend builds the one SEND every attempt of a room send repeats.
func newRoomSend(ctx context.Context, room contract.U128, key contract.ConversationID, body []byte, opts SendOptions,
	now time.Time) *roomSend {
	cmid := newRoomMessageID()
	c16, r16 := contract.U128(cmid).Bytes(), room.Bytes()
	mentions := make([]uint64, len(opts.Mentions))
	for i, u := range opts.Mentions {
		mentions[i] = uint64(u)
	}
	return &roomSend{ctx: ctx, key: key, room: room, cmid: cmid, req: &qimv1.SendRequest{ClientMessageId: c16[:],
		Target: &qimv1.SendRequest_RoomId{RoomId: r16[:]}, MessageType: uint32(opts.Type), CustomType: opts.CustomType,
		Body: body, ClientTimeMs: now.UnixMilli(), Mentions: mentions}}
}

// Rooms lists the joined set, by room id: the rooms joined and not left, whether or not the
// connection holds their membership right now (RoomInfo.Joined).
func (c *Client) Rooms() []RoomInfo { return c.rooms.snapshot() }

// ParseRoomID reads a room id written as hex (an optional 0x, 1 to 32 digits, leading zeros
// optional), the spelling of every u128 id in Q-IM (ConversationID.String, qimctl, ParseGroupID).
func ParseRoomID(s string) (contract.U128, error) {
	u, err := parseHexID(s)
	if err != nil {
		return contract.U128{}, fmt.Errorf("%w: room id %q: %v", ErrInvalid, s, err)
	}
	if _, err := roomKey(u); err != nil {
		return contract.U128{}, err
	}
	return u, nil
}

type roomOp uint8

const (
	roomJoinOp roomOp = iota + 1
	roomLeaveOp
	roomSendOp
)

// roomCmd is one app room call handed to the connection goroutine.
type roomCmd struct {
	op   roomOp
	room contract.U128
	key  contract.ConversationID
	opts RoomJoinOptions // roomJoinOp
	send *roomSend       // roomSendOp
	// loop is the connection loop the call was handed to: a command left in the channel when
	// that loop ended is refused by the next one, or a send its caller was told failed would go
	// out after all.
	loop  chan struct{}
	reply chan roomResult // capacity 1: the loop never blocks on a caller that gave up
}

type roomResult struct {
	joined RoomJoined
	ack    RoomAck
	err    error
}

// roomCall hands cmd to the connection goroutine and waits for its answer.
func (c *Client) roomCall(ctx context.Context, cmd *roomCmd) (roomResult, error) {
	c.mu.Lock()
	closed, done := c.closed, c.loopDone
	c.mu.Unlock()
	switch {
	case closed:
		return roomResult{}, ErrClosed
	case done == nil:
		return roomResult{}, ErrOffline
	}
	cmd.loop, cmd.reply = done, make(chan roomResult, 1)
	if cmd.send != nil {
		cmd.send.reply = cmd.reply
	}
	select {
	case c.roomOps <- cmd:
	case <-done:
		return roomResult{}, ErrOffline
	case <-ctx.Done():
		return roomResult{}, ctx.Err()
	}
	select {
	case r := <-cmd.reply:
		return r, r.err
	case <-done:
		select {
		case r := <-cmd.reply: // answered just before the loop ended
			return r, r.err
		default:
			return roomResult{}, ErrOffline
		}
	case <-ctx.Done():
		return roomResult{}, ctx.Err()
	}
}

// loopRunning reports whether a connection loop owns the room set; c.mu must be held.
func (c *Client) loopRunning() bool {
	if c.loopDone == nil {
		return false
	}
	select {
	case <-c.loopDone:
		return false
	default:
		return true
	}
}

// forgetRoomOffline drops a room from the set while no loop runs; c.mu must be held (it keeps
// Connect from starting a loop meanwhile).
func (c *Client) forgetRoomOffline(key contract.ConversationID) {
	en := c.rooms.rooms[key]
	if en == nil {
		return
	}
	delete(c.rooms.rooms, key)
	c.rooms.publish()
	c.events.push(RoomLeft{Room: en.room, Reason: contract.RoomLeftRequested})
}

// newRoomMessageID is a random client_message_id. Room sends are not recorded, so they take no
// durable ordinal (that would write the store); 128 random bits keep them apart from the
// derived ids of durable sends and from each other.
func newRoomMessageID() contract.ClientMessageID {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand since Go 1.24)
	u, _ := contract.U128FromBytes(b[:])
	if u.IsZero() {
		u.Lo = 1
	}
	return contract.ClientMessageID(u)
}
