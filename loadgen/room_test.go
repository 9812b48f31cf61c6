package loadgen

import (
	"context"
	"testing"
	"time"
)

func runRoomFake(t *testing.T, gw *fakeGateway) *Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := fakeConfig(gw, 40, time.Second)
	cfg.Mode, cfg.RoomSize, cfg.RoomSenders, cfg.Connections, cfg.SDKClientsPercent = ModeRoom, 3, 2, 7, 0
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// A room run joins whole rooms (7 connections: two rooms of 3), publishes 40 events over the
// rooms' senders and counts every member's read of every event: 120 deliveries, each with a
// broadcast latency sample.
func TestRoomRunCountsEveryDelivery(t *testing.T) {
	rep := runRoomFake(t, newFakeGateway(t))
	g := rep.Room
	if g == nil || rep.Config.Connections != 6 || g.Rooms != 2 || g.RoomSize != 3 {
		t.Fatalf("config %+v, room %+v", rep.Config, g)
	}
	if rep.Counts.Acked != 40 || g.ExpectedEvents != 120 || g.DeliveredEvents != 120 || g.Gaps != 0 ||
		rep.Segments[SegBroadcast.String()].Count != 120 {
		t.Fatalf("counts %+v, room %+v, broadcast %+v", rep.Counts, g, rep.Segments[SegBroadcast.String()])
	}
	for _, v := range rep.Verdicts {
		if v.Name != CheckArrival && !v.Passed { // the arrival ratio of a 1 s run is not the point
			t.Errorf("%s failed: %s", v.Name, v.Detail)
		}
	}
}

// A lost delivery is a gap at its member and fails the loss verdict.
func TestRoomRunReportsLoss(t *testing.T) {
	gw := newFakeGateway(t)
	gw.roomSkip = func(n int64) bool { return n == 10 }
	rep := runRoomFake(t, gw)
	g := rep.Room
	if g.DeliveredEvents != g.ExpectedEvents-1 || g.Gaps != 1 {
		t.Fatalf("room %+v: want one delivery short and one gap", g)
	}
	for _, v := range rep.Verdicts {
		if v.Name == CheckRoomLoss && v.Passed {
			t.Fatalf("%s passed with a lost delivery: %s", v.Name, v.Detail)
		}
	}
}

// With Reconnect, members dropped by a lost RoomWriter rejoin once it is back: every drop is
// rejoined and reported truncated, no room_seq is read twice across the new epoch, and every
// event published after the last rejoin reaches every member.
func TestRoomRunRejoinsAfterALostRoomWriter(t *testing.T) {
	gw := newFakeGateway(t)
	gw.loss = &roomLoss{at: 10, down: 300 * time.Millisecond}
	g := runRoomRejoin(t, gw)
	if g.UnavailableDrops != 6 || g.Rejoins != 6 || g.RejoinsTruncated != 6 || g.LeftAtEnd != 0 || g.Backwards != 0 {
		t.Fatalf("room %+v: want 6 drops, 6 truncated rejoins, none left, none backwards", g)
	}
	if g.AllJoinedAtS <= 0 || g.ExpectedAfterRejoin == 0 || g.DeliveredAfterRejoin != g.ExpectedAfterRejoin {
		t.Fatalf("room %+v: every event after the last rejoin must reach every member", g)
	}
}

// A rejoin answered without replay_truncated after the buffer died is reported as such: the
// chaos cell's "gap visible" check reads RejoinsTruncated against Rejoins.
func TestRoomRunReportsAnUntruncatedRejoin(t *testing.T) {
	gw := newFakeGateway(t)
	gw.loss = &roomLoss{at: 10, down: 300 * time.Millisecond, keepReplay: true}
	g := runRoomRejoin(t, gw)
	if g.Rejoins != 6 || g.RejoinsTruncated != 0 {
		t.Fatalf("room %+v: want 6 rejoins, none truncated", g)
	}
}

// An event read twice is counted backwards, once per member that read it, and not delivered.
func TestRoomRunCountsAnEventReadTwice(t *testing.T) {
	gw := newFakeGateway(t)
	gw.loss = &roomLoss{at: 10, down: 300 * time.Millisecond, dupOnce: true}
	g := runRoomRejoin(t, gw)
	if g.Backwards == 0 || g.Backwards > 3 || g.DeliveredEvents > g.ExpectedEvents {
		t.Fatalf("room %+v: want the duplicate counted backwards at its room's members, not delivered", g)
	}
}

func runRoomRejoin(t *testing.T, gw *fakeGateway) *RoomReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// 3 s at 40 events/s: the loss at the 10th send (~0.25 s) leaves seconds of events after
	// the rejoins however slowly this machine runs them.
	cfg := fakeConfig(gw, 40, 3*time.Second)
	cfg.Mode, cfg.RoomSize, cfg.RoomSenders, cfg.Connections, cfg.SDKClientsPercent = ModeRoom, 3, 2, 6, 0
	cfg.Reconnect = true
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rep.Room
}
