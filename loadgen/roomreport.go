package loadgen

import (
	"fmt"
	"maps"
)

// RoomReport is a room run's delivery (room mode only).
type RoomReport struct {
	RoomSize    int `json:"room_size"`
	Rooms       int `json:"rooms"`
	RoomSenders int `json:"room_senders"`
	// ExpectedEvents is every ACKed publish times its room's members (the publisher is one);
	// DeliveredEvents the events of this run the members read, window and settle included.
	ExpectedEvents  int64 `json:"expected_events"`
	DeliveredEvents int64 `json:"delivered_events"`
	// DeliveredRate is the events read per second of window whose publish fell in the window.
	DeliveredRate     float64 `json:"delivered_events_per_s"`
	DeliveredFraction float64 `json:"delivered_fraction"`
	// Gaps are room_seq values a member skipped; SlowConsumerDrops are members that got a
	// ROOM_LEFT (SLOW_CONSUMER, or UNAVAILABLE when a RoomWriter was lost).
	Gaps              int64   `json:"gaps"`
	SlowConsumerDrops int64   `json:"slow_consumer_drops"`
	CPUMsPerEvent     float64 `json:"cpu_ms_per_delivered_event"`
	// With Config.Reconnect (roomrejoin.go): members dropped ROOM_LEFT UNAVAILABLE, rejoins
	// answered and those answered replay_truncated, dropped members not joined again by the
	// end, and events read at or below a member's largest room_seq (twice or out of order; they
	// are not deliveries).
	UnavailableDrops int64 `json:"unavailable_drops"`
	Rejoins          int64 `json:"rejoins"`
	RejoinsTruncated int64 `json:"rejoins_truncated"`
	LeftAtEnd        int64 `json:"left_at_end"`
	Backwards        int64 `json:"backwards"`
	// AllJoinedAtS is when the last dropped member was joined again (seconds into the run, 0
	// when none was dropped); ExpectedAfterRejoin and DeliveredAfterRejoin are the deliveries
	// of the events published from the next whole second on.
	AllJoinedAtS         float64 `json:"all_joined_at_s"`
	ExpectedAfterRejoin  int64   `json:"expected_after_rejoin"`
	DeliveredAfterRejoin int64   `json:"delivered_after_rejoin"`
}

// Room-mode check names.
const (
	CheckBroadcast  = "broadcast p99"
	CheckRoomLoss   = "room events lost"
	CheckRoomFailed = "room failures"
)

// report builds a room run's report and verdicts.
func (rr *roomRun) report(ph roomPhases, rec *Recorder) *Report {
	cfg := &rr.r.cfg
	win := cfg.Duration.Seconds()
	rep := &Report{
		SchemaVersion: SchemaVersion, Label: cfg.Label, StartedAt: ph.start.UTC(),
		Config: ReportConfig{Gateway: cfg.Gateway, Mode: cfg.Mode, RoomSize: cfg.RoomSize, RoomSenders: cfg.RoomSenders, Rate: cfg.Rate,
			DurationS: win, Connections: len(rr.members), BodyBytes: cfg.BodyBytes, QueuePerConn: cfg.QueuePerConn},
		MeasuredS: ph.end.Sub(ph.start).Seconds(), TargetRate: cfg.Rate,
		AchievedSendRate: float64(rr.sentInWindow.Load()) / win,
		AckRate:          float64(rr.acked.Load()) / win,
		Segments:         map[string]SegmentSummary{},
		Timeline:         rec.Windows(),
		Settle: SettleReport{WaitedS: ph.settled.Sub(ph.end).Seconds(),
			Complete: rr.delivered.Load() >= rr.expected.Load() && rr.pending() == 0},
	}
	rep.ArrivalRatio = rep.AchievedSendRate / cfg.Rate
	for s := range numSegments {
		rep.Segments[s.String()] = rec.Summary(s)
	}
	pending := int64(rr.pending())
	rep.Counts = Counts{Scheduled: ph.sched.Scheduled, Unsent: rr.unsent.Load(), Sent: rr.sent.Load(), SentInWindow: rr.sentInWindow.Load(),
		Acked: rr.acked.Load(), AckedInWindow: rr.acked.Load(), Failed: rr.failed.Load(), Unknown: pending, Timeouts: pending,
		ConnectionsLost: rr.lost.Load(), Kicked: rr.kicked.Load(), Delivered: rr.delivered.Load(), ForeignEvents: rr.foreign.Load()}
	rr.r.failMu.Lock()
	rep.FailuresByCode = maps.Clone(rr.r.fails)
	rr.r.failMu.Unlock()
	for _, n := range rep.FailuresByCode {
		rep.Counts.Errors += n
	}
	rr.r.errMu.Lock()
	rep.Errors, rep.ErrorCount = append([]string(nil), rr.r.errs...), rr.r.nErr
	rr.r.errMu.Unlock()
	rep.CPU = cpuReport(ph.cpuBefore, ph.cpuAfter, rep.MeasuredS, rep.Counts.Acked)
	rep.Room = rr.roomReport(win)
	if n := rr.inWindow.Load(); n > 0 {
		rep.CPU.MsPerEntry, rep.CPU.EntryUnit = rep.CPU.TotalS*1000/float64(n), "room event"
		rep.Room.CPUMsPerEvent = rep.CPU.MsPerEntry
	}
	rep.Verdicts = evaluateRoom(rep, cfg.Thresholds)
	return rep
}

func (rr *roomRun) roomReport(win float64) *RoomReport {
	cfg := &rr.r.cfg
	g := &RoomReport{RoomSize: cfg.RoomSize, Rooms: rr.rooms, RoomSenders: cfg.RoomSenders, ExpectedEvents: rr.expected.Load(),
		DeliveredEvents: rr.delivered.Load(), DeliveredRate: float64(rr.inWindow.Load()) / win, Gaps: rr.gaps.Load(),
		SlowConsumerDrops: rr.slow.Load()}
	if g.ExpectedEvents > 0 {
		g.DeliveredFraction = float64(g.DeliveredEvents) / float64(g.ExpectedEvents)
	}
	rr.rejoinReport(g, rr.start)
	return g
}

// evaluateRoom judges a room run. Within capacity means every member read every event in time:
// rooms are lossy by design under overload (slow consumers are dropped), so a loss fails the
// step's capacity verdict but is not a durability failure.
func evaluateRoom(rep *Report, th Thresholds) []Verdict {
	th = th.withDefaults()
	c, g := &rep.Counts, rep.Room
	ack, b := rep.Segments[SegSendAck.String()], rep.Segments[SegBroadcast.String()]
	ackLimit, bLimit := msOf(th.SendAckP99), msOf(th.EndToEndP99)
	vs := []Verdict{
		{CheckArrival, rep.ArrivalRatio >= th.ArrivalRatio, fmt.Sprintf(
			"achieved %.1f of %.1f events/s published (%.2f %%, need ≥ %.0f %%); %d scheduled, %d unsent, generator lag p99 %.1f ms",
			rep.AchievedSendRate, rep.TargetRate, 100*rep.ArrivalRatio, 100*th.ArrivalRatio, c.Scheduled, c.Unsent,
			rep.Segments[SegGenLag.String()].P99Ms)},
		{CheckSendAck, ack.Count > 0 && ack.P99Ms <= ackLimit, fmt.Sprintf(
			"p99 %.1f ms (limit %.0f), p50 %.1f, max %.1f, %d samples", ack.P99Ms, ackLimit, ack.P50Ms, ack.MaxMs, ack.Count)},
		{CheckBroadcast, b.Count > 0 && b.P99Ms <= bLimit, fmt.Sprintf(
			"publish → member read: p99 %.1f ms (limit %.0f), p50 %.1f, max %.1f, %d deliveries", b.P99Ms, bLimit, b.P50Ms, b.MaxMs, b.Count)},
		{CheckRoomLoss, g.ExpectedEvents > 0 && g.DeliveredEvents == g.ExpectedEvents && g.Gaps == 0 && g.SlowConsumerDrops == 0 &&
			g.UnavailableDrops == 0 && g.Backwards == 0,
			fmt.Sprintf("%d of %d expected deliveries read (%.4f), %d room_seq gaps, %d members dropped (ROOM_LEFT), "+
				"%d dropped UNAVAILABLE, %d read twice or out of order",
				g.DeliveredEvents, g.ExpectedEvents, g.DeliveredFraction, g.Gaps, g.SlowConsumerDrops, g.UnavailableDrops, g.Backwards)},
		{CheckRoomFailed, c.Errors == 0 && c.Timeouts == 0 && c.ConnectionsLost == 0 && c.Kicked == 0, fmt.Sprintf(
			"%d errors%s, %d unanswered publishes, %d connections lost, %d kicked", c.Errors, ByCode(rep.FailuresByCode),
			c.Timeouts, c.ConnectionsLost, c.Kicked)},
	}
	if th.CPUMsPerMessage > 0 {
		vs = append(vs, CPUVerdict(&rep.CPU, th.CPUMsPerMessage))
	}
	return vs
}
