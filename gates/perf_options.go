package gates

import (
	"time"

	"github.com/qim-dev/qim/loadgen"
)

// PerfOptions configure gate 5 from `qim-gate run perf` flags (zero fields take the defaults).
type PerfOptions struct {
	Rate        float64       // target arrival rate, msg/s; default perfDefaultRate (250)
	Duration    time.Duration // measured window; default contract.SLODuration (180 s)
	FindMax     bool          // climb a ladder of shorter steps and report the highest passing rate
	Connections int           // message connections in 1:1 pairs (group mode: whole groups); default 400
	SDKClients  int           // percent of connections in the SDK lane; 0 disables (the CLI defaults to 5, 0 in group mode)
	// WebSDKShare is the fraction of the SDK lane's pairs driven by the TypeScript SDK under node
	// (loadgen/weblane) instead of the Go SDK; 0 disables (the CLI defaults to 0.3). Needs node
	// and npm; the gate builds clients/web first.
	WebSDKShare float64
	// Mode is loadgen.ModeDirect (default: 1:1 pairs) or loadgen.ModeGroup: every measured run
	// (and the JIT warm-up) sends Rate group messages per second to groups of GroupSize members
	// (gates/perf/perf_group.go); GroupSize must then be 1..contract.GroupMaxMembers and at most
	// Connections, and SDKClients 0.
	Mode      loadgen.Mode
	GroupSize int
	// RoomSize is loadgen.ModeRoom's joined connections per room (Connections is rounded down to
	// whole rooms; Rate is room events published per second): 1..Connections, SDKClients 0.
	RoomSize int
	// Profile captures a CPU profile of every service in the middle of the measured window
	// (single-rate runs only; a find-max climb changes rate under the profile).
	Profile bool
	// CPUBudget (ms of CPU per ACKed message across the accounted processes) is judged only when
	// set: at the run's rate, or with FindMax at the capacity rate (the highest passing step).
	// 0 reports the figure, split by process, without judging it — a run against remote target
	// hardware cannot see the processes, and below saturation the figure mostly measures idle
	// time filled with small batches.
	CPUBudget float64
	// ConnectWebhook makes the frame lane log in with opaque tokens that the deployment's
	// connect webhook (the harness's stand-in, svc.Set.IdP) answers, and adds the webhook's call
	// latency, as the gateways measured it, to the report.
	ConnectWebhook bool
	// ModerationHook runs the frame lane in the tenant whose SENDs the deployment's writers put to
	// the harness's moderation stand-in (svc.ModeratedTenant), so every one of its SENDs waits for
	// a hook call, and adds the hook's call latency, as the writers measured it, to the report.
	ModerationHook bool
}
