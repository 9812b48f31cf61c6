package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/svc"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// scenarioRoomWriterKilled: SIGKILL the RoomWriter owning a room. Its members are told ROOM_LEFT
// UNAVAILABLE, publishing and joining are refused UNAVAILABLE while it is down, and once it is
// back a rejoin from the next room_seq is answered replay_truncated (the buffer died with it)
// with a room_seq above every one issued before: the room resumes in a new epoch and the next
// event reaches every member.
func scenarioRoomWriterKilled(ctx context.Context, e *Env) error {
	if e.Set == nil {
		return errors.New("needs a service set it may kill (run inside qim-gate)")
	}
	cs, err := loginN(ctx, e, 3)
	if err != nil {
		return err
	}
	defer closeAll(cs)
	members, pub, room := cs[:2], cs[2], NewRoomID()
	for _, c := range members {
		if _, err := c.JoinRoom(ctx, room, nil); err != nil {
			return err
		}
	}
	before, err := publishRoom(ctx, pub, room, 3)
	if err != nil {
		return err
	}
	last := before[2].GetConversationSeq()
	owner, err := roomOwner(e, room)
	if err != nil {
		return err
	}
	if err := e.Set.Kill(owner); err != nil {
		return err
	}
	for i, c := range members {
		if err := leftUnavailable(ctx, c, room, last); err != nil {
			return fmt.Errorf("member %d: %w", i, err)
		}
	}
	if _, err := pub.SendRoom(ctx, room, NewCmid(), []byte("while down")); !isCode(err, contract.ErrCodeUnavailable) {
		return fmt.Errorf("publish while the RoomWriter is down: %v, want UNAVAILABLE", err)
	}
	if err := e.Set.Start(ctx, owner); err != nil {
		return err
	}
	return resumeAfterRestart(ctx, members, pub, room, last)
}

// roomOwner is the process name of the RoomWriter the gateways place room on.
func roomOwner(e *Env, room []byte) (string, error) {
	id, err := contract.U128FromBytes(room)
	if err != nil {
		return "", err
	}
	conv, err := contract.RoomConversationID(id)
	if err != nil {
		return "", err
	}
	names := e.Set.Instance(svc.Room)
	addrs := make([]string, len(names))
	for i, n := range names {
		addrs[i] = e.Set.Addrs.RPC[n]
	}
	return names[contract.RoomOwner(e.Tenant, conv, addrs)], nil
}

// leftUnavailable reads the member's frames of the room (the events up to last) until its
// ROOM_LEFT, which must say UNAVAILABLE.
func leftUnavailable(ctx context.Context, c *Client, room []byte, last uint64) error {
	seen, err := c.ReadUntilLeft(ctx, room, contract.RoomLeftUnavailable, 0)
	if err == nil && seen > last {
		err = fmt.Errorf("room_seq %d before the ROOM_LEFT, after the last published %d", seen, last)
	}
	return err
}

// resumeAfterRestart rejoins every member from last+1 (retrying while the gateways' links
// reconnect), then checks the new epoch and that the next event reaches everyone once.
func resumeAfterRestart(ctx context.Context, members []*Client, pub *Client, room []byte, last uint64) error {
	for i, c := range members {
		j, err := joinWhenBack(ctx, c, room, last+1)
		if err != nil {
			return fmt.Errorf("member %d: %w", i, err)
		}
		if !j.GetReplayTruncated() || j.GetRoomSeq() <= last {
			return fmt.Errorf("member %d rejoined: room_seq %d truncated %v; want above %d and truncated (the buffer died)",
				i, j.GetRoomSeq(), j.GetReplayTruncated(), last)
		}
		if err := c.SkipToJoined(ctx, room); err != nil {
			return err
		}
	}
	next, err := publishRoom(ctx, pub, room, 1)
	if err != nil {
		return err
	}
	seq := next[0].GetConversationSeq()
	if seq <= last+1 {
		return fmt.Errorf("first event after the restart has room_seq %d: not above the old epoch's %d", seq, last)
	}
	for i, c := range members {
		got, err := c.RoomEventsThrough(ctx, room, seq)
		if err != nil {
			return fmt.Errorf("member %d: %w", i, err)
		}
		if !slices.Equal(roomSeqs(got), []uint64{seq}) {
			return fmt.Errorf("member %d after the restart: room_seq %v, want only %d", i, roomSeqs(got), seq)
		}
	}
	return nil
}

// joinWhenBack joins with replay from `from`, retrying UNAVAILABLE for at most 30 s: the
// gateway's link to the restarted RoomWriter reconnects with backoff.
func joinWhenBack(ctx context.Context, c *Client, room []byte, from uint64) (*qimv1.RoomJoined, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		j, err := c.JoinRoom(ctx, room, ptr(from))
		if err == nil || !isCode(err, contract.ErrCodeUnavailable) || time.Now().After(deadline) {
			return j, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
