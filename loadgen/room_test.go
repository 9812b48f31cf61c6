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
