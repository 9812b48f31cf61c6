package e2e

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/svc"
	"github.com/qim-dev/qim/services/admin"
)

// scenarioRoomModerationSurvivesRestart: a ban, a mute and slow mode set through the admin API
// hold after the RoomWriter owning the room is SIGKILLed and restarted (ADR-0034 §6, amended:
// moderation is stored before it applies and loaded with the room). After the restart the
// banned user's JOIN_ROOM is NOT_MEMBER, the muted user may join but its SEND is NOT_MEMBER, a
// member's second message within the interval is RATE_LIMITED, and the room's counts report
// one ban, one mute and the interval.
func scenarioRoomModerationSurvivesRestart(ctx context.Context, e *Env) error {
	if e.Set == nil {
		return errors.New("needs a service set it may kill (run inside qim-gate)")
	}
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
	banned, muted, member, room := cs[0], cs[1], cs[2], NewRoomID()
	if err := moderateAll(ctx, e, a, room, users); err != nil {
		return err
	}
	owner, err := roomOwner(e, room)
	if err != nil {
		return err
	}
	if err := e.Set.Kill(owner); err != nil {
		return err
	}
	if err := e.Set.Start(ctx, owner); err != nil {
		return err
	}
	if _, err := joinWhenBack(ctx, member, room, 1); err != nil {
		return fmt.Errorf("a member's join after the restart: %w", err)
	}
	// Each user may be on another gateway, whose link to the restarted RoomWriter comes back on
	// its own schedule: UNAVAILABLE is retried, as a client would.
	if err := whenBack(ctx, func() error { _, err := banned.JoinRoom(ctx, room, nil); return err }); !isCode(err, contract.ErrCodeNotMember) {
		return fmt.Errorf("the banned user's JOIN_ROOM after the restart: %v, want NOT_MEMBER", err)
	}
	if err := whenBack(ctx, func() error { _, err := muted.JoinRoom(ctx, room, nil); return err }); err != nil {
		return fmt.Errorf("the muted user's join after the restart: %w", err)
	}
	if err := whenBack(ctx, func() error { _, err := muted.SendRoom(ctx, room, NewCmid(), []byte("muted")); return err }); !isCode(err, contract.ErrCodeNotMember) {
		return fmt.Errorf("the muted user's SEND after the restart: %v, want NOT_MEMBER", err)
	}
	if err := whenBack(ctx, func() error { _, err := member.SendRoom(ctx, room, NewCmid(), []byte("first")); return err }); err != nil {
		return fmt.Errorf("a member's first message after the restart: %w", err)
	}
	if _, err := member.SendRoom(ctx, room, NewCmid(), []byte("second")); !isCode(err, contract.ErrCodeRateLimited) {
		return fmt.Errorf("a member's second message within the slow-mode interval after the restart: %v, want RATE_LIMITED", err)
	}
	return countsAfterRestart(ctx, e, a, room)
}

// whenBack runs fn until it answers something other than UNAVAILABLE, for at most 30 s (as
// joinWhenBack does for joins).
func whenBack(ctx context.Context, fn func() error) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := fn()
		if !isCode(err, contract.ErrCodeUnavailable) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// moderateAll bans users[0], mutes users[1] and sets a one-minute slow mode.
func moderateAll(ctx context.Context, e *Env, a *svc.Admin, room []byte, users []contract.UserID) error {
	for _, m := range []struct {
		action   string
		user     contract.UserID
		interval uint32
	}{{"ban", users[0], 0}, {"mute", users[1], 0}, {"slow_mode", 0, 60_000}} {
		req := admin.RoomModerationRequest{Tenant: e.Tenant.String(), Room: hex.EncodeToString(room), Action: m.action,
			User: uint64(m.user), IntervalMs: m.interval}
		if err := adminCall(ctx, a.URL, a.Key, http.MethodPost, "/v1/rooms/moderation", req, 200, &admin.RoomInfo{}); err != nil {
			return fmt.Errorf("%s: %w", m.action, err)
		}
	}
	return nil
}

// countsAfterRestart reads the room's counts from the restarted owner (retrying while the admin
// API's connection to it comes back) and requires the stored moderation in them.
func countsAfterRestart(ctx context.Context, e *Env, a *svc.Admin, room []byte) error {
	path := "/v1/rooms?" + url.Values{"tenant": {e.Tenant.String()}, "room": {hex.EncodeToString(room)}}.Encode()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var info admin.RoomInfo
		err := adminCall(ctx, a.URL, a.Key, http.MethodGet, path, nil, 200, &info)
		if err == nil {
			if info.Bans != 1 || info.Mutes != 1 || info.SlowModeMs != 60_000 {
				return fmt.Errorf("the room's counts after the restart: %+v, want 1 ban, 1 mute, slow mode 60000 ms", info)
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the room's counts after the restart: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
