package chaos

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/svc"
	"github.com/qim-dev/qim/loadgen"
)

// Room cells (ADR-0034). Rooms keep nothing durable: a RoomWriter's buffer dies with it, and
// what a lost RoomWriter owes its members is a documented rule, not a replay: every member is
// told ROOM_LEFT UNAVAILABLE, publishing is refused UNAVAILABLE while it is down, and after the
// restart the room resumes in a new room_seq epoch, every rejoin saying replay_truncated. So a
// room cell is judged by that rule (judgeRooms), not by the message history checker, the outbox
// audit or the archive, which rooms never touch.
const (
	chaosRoomSize  = 10
	roomWriterHold = 5 * time.Second // publishes refused for this long, rejoins retried through it
	// roomRejoinBound: every member rejoined this soon after the restart. The gateway redials a
	// lost RoomWriter at least once a second and its channel at least every 2 s; with a 5 s
	// redial cap the last rejoin came 5.7-5.8 s after the restart in 3 of 4 runs, with 1 s
	// 0.8-0.9 s in 3 of 3.
	roomRejoinBound = 5 * time.Second
)

// roomWriterKillCell kills the RoomWriter under room load and keeps it down roomWriterHold.
func roomWriterKillCell() Cell {
	return Cell{Name: "room-writer-kill", Quick: true,
		Title:    "rooms of 10: SIGKILL the RoomWriter and keep it down 5 s; members rejoin a new room_seq epoch and see the gap",
		RoomSize: chaosRoomSize, Fault: killService(svc.Room), Hold: roomWriterHold, Heal: restartService(svc.Room)}
}

// roomLoad shapes a room cell's load: rooms of c.RoomSize, two publishers each, members
// rejoining when told UNAVAILABLE; no SDK lane and no message history (rooms have neither).
func roomLoad(cfg *loadgen.Config, c Cell, rate float64) {
	cfg.Mode, cfg.RoomSize, cfg.RoomSenders, cfg.Rate = loadgen.ModeRoom, c.RoomSize, 2, rate
	cfg.SDKClientsPercent, cfg.SDKLane, cfg.History = 0, nil, nil
}

// judgeRooms holds a room cell to the rule above; rep.Room is the load's room report.
func judgeRooms(res *CellResult, rep *loadgen.Report, fr *faultRun) {
	g := rep.Room
	if g == nil {
		res.check("room load", false, "the load ran no rooms")
		return
	}
	res.Room = g
	members := int64(g.Rooms * g.RoomSize)
	res.check("every member told UNAVAILABLE", members > 0 && g.UnavailableDrops == members,
		"%d of %d members got ROOM_LEFT UNAVAILABLE when the RoomWriter died (%d other drops)",
		g.UnavailableDrops, members, g.SlowConsumerDrops)
	rejoinedS := g.AllJoinedAtS - fr.healAt.Sub(rep.StartedAt).Seconds()
	res.check("every member rejoined", g.Rejoins == g.UnavailableDrops && g.LeftAtEnd == 0 &&
		rejoinedS <= roomRejoinBound.Seconds(),
		"%d rejoins for %d drops, %d members left at the end; the last rejoin %.1f s after the restart (bound %s)",
		g.Rejoins, g.UnavailableDrops, g.LeftAtEnd, rejoinedS, roomRejoinBound)
	res.check("the gap is visible", g.RejoinsTruncated == g.Rejoins,
		"%d of %d rejoins answered replay_truncated (the buffer died with the RoomWriter)", g.RejoinsTruncated, g.Rejoins)
	res.check("room_seq never read twice or backwards", g.Backwards == 0,
		"%d events read at or below a member's largest room_seq, across the new epoch included", g.Backwards)
	res.check("after the rejoins every event reaches every member",
		g.ExpectedAfterRejoin > 0 && g.DeliveredAfterRejoin == g.ExpectedAfterRejoin,
		"%d of %d deliveries of the events published from %.0f s on (all members joined at %.1f s), %d room_seq gaps",
		g.DeliveredAfterRejoin, g.ExpectedAfterRejoin, float64(int(g.AllJoinedAtS)+1), g.AllJoinedAtS, g.Gaps)
	judgeRoomFailures(res, rep)
}

// judgeRoomFailures: a publish may be refused UNAVAILABLE (the RoomWriter was down) and nothing
// else; none may stay unanswered, and no connection may be lost or kicked.
func judgeRoomFailures(res *CellResult, rep *loadgen.Report) {
	c := rep.Counts
	codes := slices.Sorted(maps.Keys(rep.FailuresByCode))
	other := slices.DeleteFunc(slices.Clone(codes), func(code string) bool { return code == contract.ErrCodeUnavailable.String() })
	res.check("publishes refused only as UNAVAILABLE", len(other) == 0 && c.Timeouts == 0 && c.ConnectionsLost == 0 &&
		c.Kicked == 0 && rep.ErrorCount == 0,
		"%d refused%s; %d unanswered, %d connections lost, %d kicked, %d load errors%s", c.Failed, loadgen.ByCode(rep.FailuresByCode),
		c.Timeouts, c.ConnectionsLost, c.Kicked, rep.ErrorCount, firstError(rep.Errors))
}

func firstError(errs []string) string {
	if len(errs) == 0 {
		return ""
	}
	return fmt.Sprintf(" (first: %s)", errs[0])
}

// roomSummary is a room cell's one line.
func roomSummary(r *CellResult) string {
	g := r.Room
	return fmt.Sprintf("fault %.1fs, healed %.1fs; rooms of %d: %d dropped, %d rejoined (%d truncated) by %.1fs; "+
		"%d of %d deliveries after the rejoins", r.FaultS, r.HealS, g.RoomSize, g.UnavailableDrops, g.Rejoins,
		g.RejoinsTruncated, g.AllJoinedAtS, g.DeliveredAfterRejoin, g.ExpectedAfterRejoin)
}

// roomWriterIsolationCell kills the RoomWriter under the ordinary message load: conversations
// never touch it (ADR-0034: rooms are a separate write path), so the cell is judged like every
// message cell and, by isolationWatch, holds the load to no failure at all — not one SEND refused,
// unanswered or cut off while the RoomWriter is down.
func roomWriterIsolationCell() Cell {
	return Cell{Name: "room-writer-kill-conversations-unaffected", Quick: true,
		Title: "SIGKILL the RoomWriter under 1:1 load and keep it down 5 s: no SEND refused, unanswered or lost",
		Fault: killService(svc.Room), Hold: roomWriterHold, Heal: restartService(svc.Room),
		Watch: func() Watch { return isolationWatch{} }}
}

// isolationWatch requires a load without a single failure.
type isolationWatch struct{}

func (isolationWatch) start(context.Context, *Target) {}

func (isolationWatch) judge(_ context.Context, res *CellResult, _ *faultRun, rep *loadgen.Report) {
	c := rep.Counts
	res.check("conversations unaffected", c.Failed == 0 && c.Timeouts == 0 && c.ConnectionsLost == 0 && c.Kicked == 0 &&
		rep.ErrorCount == 0 && c.Acked > 0,
		"%d acknowledged; %d refused%s, %d unanswered, %d connections lost, %d kicked, %d load errors%s", c.Acked, c.Failed,
		loadgen.ByCode(rep.FailuresByCode), c.Timeouts, c.ConnectionsLost, c.Kicked, rep.ErrorCount, firstError(rep.Errors))
}
