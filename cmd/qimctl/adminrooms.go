package main

// qimctl admin room …: room moderation and counts through the admin API (POST
// /v1/rooms/moderation, GET /v1/rooms), which calls the room's owning RoomWriter.

import (
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/qim-dev/qim/services/admin"
)

func newAdminRoomCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "room",
		Short: "Moderate rooms and read their counts through the admin API",
		Long: `Bans, kicks and mutes users in a room, sets its slow mode and rate limit, and prints its counts.
Each command calls the admin API (key scope rooms), which calls the RoomWriter owning the room;
while that RoomWriter is down the command fails (503) rather than reaching another instance.
The RoomWriter stores bans, mutes, slow mode and rate limits before it answers, so they survive
its restart; a kick ends the connections joined at the time. Each command prints the room's counts after the change.

Examples:
  qimctl admin room ban --url http://10.0.0.9:7300 --key-file ops.key --room 0000000000000000000000000000beef --user 42 --duration 10m
  qimctl admin room slow-mode --url http://10.0.0.9:7300 --key-file ops.key --room 0000000000000000000000000000beef --interval 5s
  qimctl admin room info --url http://10.0.0.9:7300 --key-file ops.key --room 0000000000000000000000000000beef`,
	}
	for _, u := range []struct {
		action, short string
		timed         bool
	}{
		{"ban", "Refuse --user's joins and publishes in --room and remove its joined connections (ROOM_LEFT REMOVED)", true},
		{"unban", "Lift --user's ban in --room", false},
		{"kick", "Remove --user's joined connections from --room now (ROOM_LEFT REMOVED); it may rejoin", false},
		{"mute", "Refuse --user's publishes in --room; it keeps reading", true},
		{"unmute", "Lift --user's mute in --room", false},
	} {
		cmd.AddCommand(newAdminRoomUserCmd(u.action, u.short, u.timed))
	}
	cmd.AddCommand(newAdminRoomSlowModeCmd(), newAdminRoomRateLimitCmd(), newAdminRoomInfoCmd())
	return cmd
}

// roomFlags are the flags every room command takes: the API's and --room.
func roomFlags(cmd *cobra.Command, a *adminAPI, room *string) {
	a.flags(cmd)
	cmd.Flags().StringVar(room, "room", "", "room id, 32 hex digits (required)")
	_ = cmd.MarkFlagRequired("room")
}

// moderate sends req with the --tenant and prints the room's counts.
func (a *adminAPI) moderate(cmd *cobra.Command, req admin.RoomModerationRequest) error {
	req.Tenant = a.tenant
	return a.call(cmd.Context(), http.MethodPost, "/v1/rooms/moderation", req, cmd.OutOrStdout())
}

func newAdminRoomUserCmd(action, short string, timed bool) *cobra.Command {
	a, req, d := &adminAPI{}, admin.RoomModerationRequest{Action: action}, time.Duration(0)
	cmd := &cobra.Command{Use: action, Short: short, Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if req.DurationS, err = inUnits(d, time.Second, "--duration"); err != nil {
				return fmt.Errorf("qimctl admin room %s: %w", action, err)
			}
			return a.moderate(cmd, req)
		}}
	roomFlags(cmd, a, &req.Room)
	cmd.Flags().Uint64Var(&req.User, "user", 0, "user id (required)")
	_ = cmd.MarkFlagRequired("user")
	if timed {
		cmd.Flags().DurationVar(&d, "duration", 0, "how long it lasts, whole seconds, e.g. 10m (default: until lifted with un"+action+")")
	}
	return cmd
}

func newAdminRoomSlowModeCmd() *cobra.Command {
	a, req, d := &adminAPI{}, admin.RoomModerationRequest{Action: "slow_mode"}, time.Duration(0)
	cmd := &cobra.Command{Use: "slow-mode", Short: "Let each member of --room publish at most once per --interval (0 turns slow mode off)",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if req.IntervalMs, err = inUnits(d, time.Millisecond, "--interval"); err != nil {
				return fmt.Errorf("qimctl admin room slow-mode: %w", err)
			}
			return a.moderate(cmd, req)
		}}
	roomFlags(cmd, a, &req.Room)
	// Required, with 0 meaning off: a forgotten flag must not turn slow mode off.
	cmd.Flags().DurationVar(&d, "interval", 0, "shortest time between two publishes of a member, e.g. 5s; 0: off (required)")
	_ = cmd.MarkFlagRequired("interval")
	return cmd
}

func newAdminRoomRateLimitCmd() *cobra.Command {
	a, req := &adminAPI{}, admin.RoomModerationRequest{Action: "rate_limit"}
	cmd := &cobra.Command{Use: "rate-limit", Short: "Let --room take at most --per-second messages per second from all members (0 turns the limit off)",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.moderate(cmd, req) }}
	roomFlags(cmd, a, &req.Room)
	cmd.Flags().Uint32Var(&req.EventsPerS, "per-second", 0, "messages per second the room accepts; 0: no limit (required)")
	_ = cmd.MarkFlagRequired("per-second")
	return cmd
}

func newAdminRoomInfoCmd() *cobra.Command {
	a, room := &adminAPI{}, ""
	cmd := &cobra.Command{Use: "info", Short: "Print --room's counts: members, online connections, buffered events, moderation settings",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.call(cmd.Context(), http.MethodGet, "/v1/rooms"+a.query("room", room), nil, cmd.OutOrStdout())
		}}
	roomFlags(cmd, a, &room)
	return cmd
}

// inUnits is d as a whole number of unit for the API's uint32 fields: a negative, fractional or
// too long d is refused rather than rounded, so what is sent is what was asked.
func inUnits(d, unit time.Duration, flag string) (uint32, error) {
	if d < 0 || d%unit != 0 || d/unit > math.MaxUint32 {
		return 0, fmt.Errorf("%s %s: want a whole number of %s, 0 to %d of them", flag, d, unit, uint64(math.MaxUint32))
	}
	return uint32(d / unit), nil
}
