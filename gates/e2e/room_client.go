package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

// roomFrameBuffer is how many room frames a Client holds unread before it stops reading its
// socket (RoomFrames).
const roomFrameBuffer = 4096

// Stall makes the client stop reading its socket at the next room frame, until Resume: how a
// slow consumer looks to the gateway.
func (c *Client) Stall() {
	ch := make(chan struct{})
	c.stall.Store(&ch)
}

// Resume ends a Stall.
func (c *Client) Resume() {
	if ch := c.stall.Swap(nil); ch != nil {
		close(*ch)
	}
}

// deliverRoom hands a room frame to RoomFrames, waiting out a Stall; false when the client was
// closed meanwhile.
func (c *Client) deliverRoom(m wire.Message) bool {
	if ch := c.stall.Load(); ch != nil {
		select {
		case <-*ch:
		case <-c.stop:
			return false
		}
	}
	select {
	case c.rooms <- m:
		return true
	case <-c.stop:
		return false
	}
}

// NewRoomID is a random room id (16 bytes, never zero).
func NewRoomID() []byte { return NewCmid() }

// JoinRoom joins a room; from nil joins live only, otherwise replays from *from.
func (c *Client) JoinRoom(ctx context.Context, room []byte, from *uint64) (*qimv1.RoomJoined, error) {
	var ok qimv1.RoomJoined
	if err := c.Call(ctx, contract.OpJoinRoom, &qimv1.JoinRoom{RoomId: room, ReplayFromRoomSeq: from}, contract.OpRoomJoined, &ok); err != nil {
		return nil, err
	}
	return &ok, nil
}

// LeaveRoom leaves a room and returns the answering ROOM_LEFT.
func (c *Client) LeaveRoom(ctx context.Context, room []byte) (*qimv1.RoomLeft, error) {
	var left qimv1.RoomLeft
	if err := c.Call(ctx, contract.OpLeaveRoom, &qimv1.LeaveRoom{RoomId: room}, contract.OpRoomLeft, &left); err != nil {
		return nil, err
	}
	return &left, nil
}

// SendRoom publishes a text event into a room.
func (c *Client) SendRoom(ctx context.Context, room, cmid, body []byte) (*qimv1.SendAck, error) {
	var ack qimv1.SendAck
	req := &qimv1.SendRequest{ClientMessageId: cmid, Target: &qimv1.SendRequest_RoomId{RoomId: room},
		MessageType: uint32(contract.MessageText), Body: body}
	if err := c.Call(ctx, contract.OpSend, req, contract.OpSendAck, &ack); err != nil {
		return nil, err
	}
	return &ack, nil
}

// roomLeftError is a ROOM_LEFT a scenario did not expect.
type roomLeftError struct{ reason contract.RoomLeftReason }

func (e *roomLeftError) Error() string { return "ROOM_LEFT " + e.reason.String() }

// NextRoomEvents returns the events of the next ROOM_EVENTS frame of room (frames of other rooms
// are skipped); a ROOM_LEFT of the room is returned as a *roomLeftError.
func (c *Client) NextRoomEvents(ctx context.Context, room []byte) ([]*qimv1.RoomEvent, error) {
	for {
		select {
		case m := <-c.rooms:
			if m.Opcode == contract.OpRoomJoined {
				continue // SkipToJoined's marker
			}
			if m.Opcode == contract.OpRoomLeft {
				var left qimv1.RoomLeft
				if err := proto.Unmarshal(m.Payload, &left); err != nil {
					return nil, err
				}
				if bytes.Equal(left.GetRoomId(), room) {
					return nil, &roomLeftError{contract.RoomLeftReason(left.GetReason())}
				}
				continue
			}
			var evs qimv1.RoomEvents
			if err := proto.Unmarshal(m.Payload, &evs); err != nil {
				return nil, err
			}
			if bytes.Equal(evs.GetRoomId(), room) {
				return evs.GetEvents(), nil
			}
		case <-c.closed:
			return nil, fmt.Errorf("%w (%v)", ErrClosed, c.readErr)
		case <-ctx.Done():
			return nil, fmt.Errorf("e2e: waiting for ROOM_EVENTS: %w", ctx.Err())
		}
	}
}

// SkipToJoined discards the room frames that arrived before room's ROOM_JOINED (a rejoin's),
// as a client drops events of rooms it is not joined to.
func (c *Client) SkipToJoined(ctx context.Context, room []byte) error {
	for {
		select {
		case m := <-c.rooms:
			var j qimv1.RoomJoined
			if m.Opcode == contract.OpRoomJoined && proto.Unmarshal(m.Payload, &j) == nil && bytes.Equal(j.GetRoomId(), room) {
				return nil
			}
		case <-c.closed:
			return fmt.Errorf("%w (%v)", ErrClosed, c.readErr)
		case <-ctx.Done():
			return fmt.Errorf("e2e: waiting for ROOM_JOINED: %w", ctx.Err())
		}
	}
}

// errNotLeft is ReadUntilLeft's answer when the member read up to its stopAt without a ROOM_LEFT.
var errNotLeft = errors.New("e2e: read through the stop without a ROOM_LEFT")

// ReadUntilLeft reads a room's frames until its ROOM_LEFT, which must give want, and returns the
// last room_seq read before it (0: none), checking that they only increase. stopAt > 0 ends the
// read with errNotLeft once an event at or past it arrived first.
func (c *Client) ReadUntilLeft(ctx context.Context, room []byte, want contract.RoomLeftReason, stopAt uint64) (uint64, error) {
	seen := uint64(0)
	for {
		evs, err := c.NextRoomEvents(ctx, room)
		var left *roomLeftError
		switch {
		case errors.As(err, &left) && left.reason == want:
			return seen, nil
		case err != nil:
			return seen, fmt.Errorf("waiting for ROOM_LEFT %s: %w", want, err)
		}
		for _, ev := range evs {
			if ev.GetRoomSeq() <= seen {
				return seen, fmt.Errorf("room_seq %d after %d", ev.GetRoomSeq(), seen)
			}
			seen = ev.GetRoomSeq()
		}
		if stopAt > 0 && seen >= stopAt {
			return seen, errNotLeft
		}
	}
}

// RoomEventsThrough collects a room's events until one with room_seq ≥ last arrived.
func (c *Client) RoomEventsThrough(ctx context.Context, room []byte, last uint64) ([]*qimv1.RoomEvent, error) {
	var out []*qimv1.RoomEvent
	for len(out) == 0 || out[len(out)-1].GetRoomSeq() < last {
		evs, err := c.NextRoomEvents(ctx, room)
		if err != nil {
			return out, err
		}
		out = append(out, evs...)
	}
	return out, nil
}

// roomSeqs lists the room_seq of events.
func roomSeqs(evs []*qimv1.RoomEvent) []uint64 {
	out := make([]uint64, len(evs))
	for i, e := range evs {
		out[i] = e.GetRoomSeq()
	}
	return out
}

// seqRun is first, first+1, …, last.
func seqRun(first, last uint64) []uint64 {
	var out []uint64
	for s := first; s <= last; s++ {
		out = append(out, s)
	}
	return out
}
