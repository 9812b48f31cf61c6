package e2e

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/admin"
)

// scenarioRoomModeration: an operator moderates a room through the admin API. The counts see
// every joined connection; a ban ends the banned user's membership with ROOM_LEFT REMOVED and
// refuses its join and publish NOT_MEMBER while the others go on; a mute refuses publishing
// only; slow mode answers RATE_LIMITED with retry_after_ms; unban admits the user again.
func scenarioRoomModeration(ctx context.Context, e *Env) error {
	a, err := e.Set.StartAdmin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = a.Stop() }()
	cs, users, err := loginUsers(ctx, e, 3)
	if err != nil {
		return err
	}
	defer closeAll(cs)
	bad, good, pub, room := cs[0], cs[1], cs[2], NewRoomID()
	for _, c := range cs[:2] {
		if _, err := c.JoinRoom(ctx, room, nil); err != nil {
			return err
		}
	}
	mod := func(action string, user contract.UserID, intervalMs uint32) (admin.RoomInfo, error) {
		var info admin.RoomInfo
		req := admin.RoomModerationRequest{Tenant: e.Tenant.String(), Room: hex.EncodeToString(room), Action: action,
			User: uint64(user), IntervalMs: intervalMs}
		return info, adminCall(ctx, a.URL, a.Key, http.MethodPost, "/v1/rooms/moderation", req, 200, &info)
	}
	info, err := mod("ban", users[0], 0)
	if err != nil {
		return err
	}
	if info.Members != 1 || info.Online != 1 || info.Bans != 1 {
		return fmt.Errorf("after banning one of two members: %+v", info)
	}
	if err := leftRemoved(ctx, bad, room); err != nil {
		return err
	}
	if _, err := bad.JoinRoom(ctx, room, nil); !isCode(err, contract.ErrCodeNotMember) {
		return fmt.Errorf("a banned user's JOIN_ROOM: %v, want NOT_MEMBER", err)
	}
	if _, err := bad.SendRoom(ctx, room, NewCmid(), []byte("banned")); !isCode(err, contract.ErrCodeNotMember) {
		return fmt.Errorf("a banned user's SEND: %v, want NOT_MEMBER", err)
	}
	if err := stillDelivered(ctx, pub, good, room); err != nil {
		return err
	}
	return muteAndSlowMode(ctx, mod, bad, pub, room, users)
}

// muteAndSlowMode: unban admits the user again; a mute refuses its publishes; slow mode limits
// another member to one message per interval and says how long to wait.
func muteAndSlowMode(ctx context.Context, mod func(string, contract.UserID, uint32) (admin.RoomInfo, error),
	bad, pub *Client, room []byte, users []contract.UserID) error {
	if _, err := mod("unban", users[0], 0); err != nil {
		return err
	}
	if _, err := bad.JoinRoom(ctx, room, nil); err != nil {
		return fmt.Errorf("rejoin after the unban: %w", err)
	}
	if _, err := mod("mute", users[0], 0); err != nil {
		return err
	}
	if _, err := bad.SendRoom(ctx, room, NewCmid(), []byte("muted")); !isCode(err, contract.ErrCodeNotMember) {
		return fmt.Errorf("a muted user's SEND: %v, want NOT_MEMBER", err)
	}
	if _, err := mod("slow_mode", 0, 60_000); err != nil {
		return err
	}
	if _, err := pub.SendRoom(ctx, room, NewCmid(), []byte("first")); err != nil {
		return fmt.Errorf("first message under slow mode: %w", err)
	}
	_, err := pub.SendRoom(ctx, room, NewCmid(), []byte("second"))
	var se *ServerError
	if !errors.As(err, &se) || se.Code != contract.ErrCodeRateLimited || se.RetryAfterMs == 0 || se.RetryAfterMs > 60_000 {
		return fmt.Errorf("second message within the slow-mode interval: %v, want RATE_LIMITED with retry_after_ms in (0, 60000]", err)
	}
	return nil
}

// leftRemoved reads the member's room frames until its ROOM_LEFT, which must say REMOVED.
func leftRemoved(ctx context.Context, c *Client, room []byte) error {
	if _, err := c.ReadUntilLeft(ctx, room, contract.RoomLeftRemoved, 0); err != nil {
		return fmt.Errorf("the banned member: %w", err)
	}
	return nil
}

// stillDelivered: a remaining member gets the next event.
func stillDelivered(ctx context.Context, pub, member *Client, room []byte) error {
	acks, err := publishRoom(ctx, pub, room, 1)
	if err != nil {
		return err
	}
	if _, err := member.RoomEventsThrough(ctx, room, acks[0].GetConversationSeq()); err != nil {
		return fmt.Errorf("the remaining member: %w", err)
	}
	return nil
}
