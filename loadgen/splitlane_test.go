package loadgen

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// fakeLane records its env and reports what it is told.
type fakeLane struct {
	env      LaneEnv
	startErr error
	rep      LaneReport
}

func (f *fakeLane) Start(_ context.Context, env LaneEnv) error { f.env = env; return f.startErr }
func (f *fakeLane) Report() LaneReport                         { return f.rep }

func TestSplitLaneGivesEachLaneWholePairsOfItsOwnUsers(t *testing.T) {
	a := &fakeLane{rep: LaneReport{Sent: 10, Acked: 10, Received: 10, Passed: true, Verified: true, Detail: "go"}}
	b := &fakeLane{rep: LaneReport{Sent: 4, Acked: 4, Received: 3, Missing: 1, Verified: true, Detail: "web"}}
	l := SplitLane(a, b, 0.25)
	if err := l.Start(context.Background(), LaneEnv{FirstUser: 100, Clients: 20, Rate: 10}); err != nil {
		t.Fatal(err)
	}
	if a.env.Clients != 14 || b.env.Clients != 6 || a.env.FirstUser != 100 || b.env.FirstUser != 114 {
		t.Fatalf("split: first %d from %d, second %d from %d", a.env.Clients, a.env.FirstUser, b.env.Clients, b.env.FirstUser)
	}
	if a.env.Rate != 7 || b.env.Rate != 3 {
		t.Fatalf("rates %v and %v, want the lane's rate split like its clients", a.env.Rate, b.env.Rate)
	}
	r := l.Report()
	if r.Passed || r.Sent != 14 || r.Missing != 1 || !strings.Contains(r.Detail, "go") || !strings.Contains(r.Detail, "web") {
		t.Fatalf("a failing second lane must fail the sum: %+v", r)
	}
}

func TestSplitLaneFailsWhenALaneCannotStart(t *testing.T) {
	a := &fakeLane{rep: LaneReport{Passed: true, Verified: true}}
	b := &fakeLane{startErr: errors.New("no node")}
	l := SplitLane(a, b, 0.5)
	if err := l.Start(context.Background(), LaneEnv{FirstUser: 1, Clients: 4}); err == nil {
		t.Fatal("Start hid the second lane's failure")
	}
	if r := l.Report(); r.Passed || !strings.Contains(r.Detail, "no node") {
		t.Fatalf("report %+v", r)
	}
	one := SplitLane(a, &fakeLane{}, 0.1)
	if err := one.Start(context.Background(), LaneEnv{Clients: 2}); err != nil || a.env.Clients != 2 {
		t.Fatalf("one pair stays with the first lane: %v, %d", err, a.env.Clients)
	}
}
