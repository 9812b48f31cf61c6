package main

import (
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/sdk"
)

// Rooms (qim_join_room, qim_leave_room, qim_send_room): live, lossy, never stored. Each call
// waits for the server's answer, bounded by timeout (default 10 s); the room's events arrive
// through qim_next_event.

// joinRoom joins room (32 hex digits) with replay from replayFrom when replay is set.
func joinRoom(h uint64, room string, replay bool, replayFrom uint64, timeout time.Duration) (string, error) {
	cl, id, err := roomTarget(h, room)
	if err != nil {
		return "", err
	}
	ctx, cancel := callCtx(cl, timeout)
	defer cancel()
	j, err := cl.c.JoinRoom(ctx, id, sdk.RoomJoinOptions{Replay: replay, ReplayFrom: replayFrom})
	if err != nil {
		return "", classify(err)
	}
	return marshal(map[string]any{"room": j.Room.String(), "room_seq": dec(j.RoomSeq), "replay_truncated": j.ReplayTruncated})
}

func leaveRoom(h uint64, room string, timeout time.Duration) error {
	cl, id, err := roomTarget(h, room)
	if err != nil {
		return err
	}
	ctx, cancel := callCtx(cl, timeout)
	defer cancel()
	return classify(cl.c.LeaveRoom(ctx, id))
}

// sendRoom publishes body into room and returns the server's ack.
func sendRoom(h uint64, room string, body []byte, timeout time.Duration) (string, error) {
	cl, id, err := roomTarget(h, room)
	if err != nil {
		return "", err
	}
	ctx, cancel := callCtx(cl, timeout)
	defer cancel()
	a, err := cl.c.SendRoom(ctx, id, body, sdk.SendOptions{})
	if err != nil {
		return "", classify(err)
	}
	return marshal(map[string]any{"room": a.Room.String(), "client_message_id": contract.U128(a.ClientMessageID).String(),
		"room_seq": dec(a.RoomSeq), "sent_at_ms": a.SentAtMs})
}

func roomTarget(h uint64, room string) (*client, contract.U128, error) {
	cl, err := lookup(h)
	if err != nil {
		return nil, contract.U128{}, err
	}
	id, err := contract.ParseU128(room)
	if err != nil || id.IsZero() {
		return nil, contract.U128{}, errorf(codeInvalid, "room %q is not 32 hex digits of a non-zero id", room)
	}
	return cl, id, nil
}
