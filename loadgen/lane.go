package loadgen

import (
	"context"
	"fmt"
	"time"

	"github.com/qim-dev/qim/chaos/history"
	"github.com/qim-dev/qim/contract"
)

// Lane is the SDK regression lane: a share of the connections (Config.SDKClientsPercent,
// default 5 % in the CLIs) driven by the real client SDK instead of frame-level code, so the
// SDK's state machine, cursors, pending sends and dedup are executed under load. The rule
// (docs/adr/0011-sdk-lane-drives-the-real-sdk.md): the load generator must not carry its own copy
// of that logic — a copy drifts, and the drifted side is the one never load-tested.
//
// This package does not import the SDK (frame-only users must not link it): the
// implementation is loadgen/sdklane, which gate 5 and qim-loadgen wire. A run whose
// Config.SDKLane is nil with SDKClientsPercent > 0 reports the lane as not available, which
// FAILS its check.
//
// Contract for an implementation:
//   - Start connects env.Clients SDK clients as env.Clients/2 pairs of users from
//     env.FirstUser on, returns once they are authenticated (an error fails the lane), and then
//     runs in its own goroutines: each client sends to its peer at env.Rate/env.Clients msg/s
//     for env.Duration, every message numbered by a per-sender ordinal in its body.
//   - After the window, each receiving client waits at most env.Settle for the SDK to surface
//     its peer's messages, then the lane verifies per pair that every ordinal the SDK reported
//     as sent (acknowledged) was received exactly once after the SDK's own dedup — no gaps, no
//     repeats. A client's echo of its own message is reconciled by the SDK and never counted.
//   - Report blocks until that verification is done (or the ctx given to Start ends) and is
//     called exactly once.
type Lane interface {
	Start(ctx context.Context, env LaneEnv) error
	Report() LaneReport
}

// LaneEnv is what a lane gets from the run.
type LaneEnv struct {
	Gateway     string
	TokenSecret []byte
	Tenant      contract.TenantID
	FirstUser   contract.UserID // users FirstUser .. FirstUser+Clients-1 belong to the lane
	Clients     int             // even
	Rate        float64         // the lane's share of the target rate, msg/s
	Duration    time.Duration
	Settle      time.Duration
	// RunID is the run's random id; lane bodies carry it so a message of another run (or of
	// the frame lane) is recognised as stray. Zero: the lane draws its own.
	RunID uint64
	// History, when set, receives the lane's sends, outcomes and deliveries for the chaos
	// checker (chaos/history, Lane SDK). Nil: nothing is recorded.
	History *history.Recorder
}

// LaneReport is the lane's verdict and numbers.
type LaneReport struct {
	Enabled   bool   `json:"enabled"`   // SDKClientsPercent > 0
	Available bool   `json:"available"` // an implementation was wired
	Clients   int    `json:"clients"`
	Sent      int64  `json:"sent"`
	Acked     int64  `json:"acked"`
	Received  int64  `json:"received"`
	Missing   int64  `json:"missing"`  // acknowledged ordinals never received
	Repeated  int64  `json:"repeated"` // ordinals received more than once after SDK dedup
	Failed    int64  `json:"failed"`   // sends the SDK reported Failed (or refused to record)
	Passed    bool   `json:"passed"`   // set by the lane
	Detail    string `json:"detail"`
	Verified  bool   `json:"verified"` // the per-pair verification ran to completion
}

// LaneNotAvailable is the detail of a lane that was asked for but not wired.
const LaneNotAvailable = "SDK lane not available in this build"

// startLane starts the SDK lane when one is wired and enabled. A lane that cannot start is
// remembered as a failed report, not as a run error: the frame lane's evidence still counts.
func (r *runState) startLane(ctx context.Context, clients, firstIdx int) *laneRun {
	if clients == 0 || r.cfg.SDKLane == nil {
		return nil
	}
	env := LaneEnv{Gateway: r.cfg.Gateway, TokenSecret: r.cfg.TokenSecret, Tenant: r.cfg.Tenant,
		FirstUser: r.user(firstIdx), Clients: clients, Rate: r.cfg.Rate * float64(clients) / float64(r.cfg.Connections),
		Duration: r.cfg.Duration, Settle: r.cfg.SettleTimeout, RunID: r.runID, History: r.cfg.History}
	lr := &laneRun{lane: r.cfg.SDKLane, clients: clients}
	if err := lr.lane.Start(ctx, env); err != nil {
		lr.startErr = fmt.Errorf("loadgen: SDK lane did not start: %w", err)
	}
	return lr
}

type laneRun struct {
	lane     Lane
	clients  int
	startErr error
}

// finishLane collects the lane's report; the absence of a lane when one was asked for is a
// failed report.
func (r *runState) finishLane(_ context.Context, lr *laneRun, clients int) LaneReport {
	switch {
	case r.cfg.Mode == ModeGroup:
		return LaneReport{Detail: "disabled in group mode: the SDK lane drives 1:1 pairs, every connection is a frame-level group member"}
	case clients == 0:
		return LaneReport{Detail: "disabled (SDK clients 0%): frame-level capacity control run"}
	case lr == nil:
		return LaneReport{Enabled: true, Clients: clients, Detail: LaneNotAvailable}
	case lr.startErr != nil:
		return LaneReport{Enabled: true, Available: true, Clients: lr.clients, Detail: lr.startErr.Error()}
	}
	rep := lr.lane.Report()
	rep.Enabled, rep.Available, rep.Clients = true, true, lr.clients
	return rep
}
