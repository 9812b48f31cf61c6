package gates

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/qim-dev/qim/gates/svc"
	"github.com/qim-dev/qim/loadgen"
	"github.com/qim-dev/qim/loadgen/sdklane"
)

// SoakOptions configure the soak gate from `qim-gate run soak` flags.
type SoakOptions struct {
	Duration time.Duration // of the load; default soakDefaultDuration (1 h)
	Rate     float64       // total offered rate, msg/s (rooms: events/s); default the perf gate's release rate
}

// soakGate is the nightly soak (issue 42, item 9): `qim-gate run soak --duration 1h` offers
// the release rate for the whole duration on the run's deployment, as three concurrent loads:
// 1:1 pairs with the SDK lane, a group share and (where the deployment runs rooms) a room
// share. It samples every service's resident memory, open file descriptors and goroutines and
// the stores' footprint every soakSampleEvery, judges that they stay bounded (soak_judge.go),
// keeps every load's own verdicts (nothing lost, latency within the SLO), and ends with gate 8's
// invariants and gate 9's orphan audit over everything committed. Report:
// soak-footprint.json and soak-footprint.html, the footprint plotted over time.
//
// Not in the release run: an hour of load is its point. `qim-gate run soak` runs it by name;
// --full never does (OnDemand).
//
// Rejected: one loadgen run in a mixed mode. loadgen's modes judge different contracts (pairs,
// group fan-out, room delivery); three runs side by side keep each judge as the perf gate uses
// it, at the cost of three progress streams (only the 1:1 run prints).
type soakGate struct{}

// OnDemand are the gates run only by name, never by --full or `make test`.
func OnDemand() []Gate { return []Gate{soakGate{}} }

func (soakGate) Name() string { return "soak" }
func (soakGate) Title() string {
	return "nightly soak: the release rate for an hour, group and room shares, footprint bounded, audits clean"
}

const (
	soakDefaultDuration = time.Hour
	soakDefaultRate     = 250
	soakSampleEvery     = 10 * time.Second
	soakGroupShare      = 0.1 // of the rate, as group messages to groups of soakGroupSize
	soakRoomShare       = 0.1 // of the rate, as room events into rooms of soakRoomSize
	soakGroupSize       = 10
	soakRoomSize        = 10
	soakConnections     = 200 // 1:1 connections; the group and room loads add 5 groups and 5 rooms
	soakSDKPercent      = 10
)

func (g soakGate) Run(ctx context.Context, env *Env, r *Result) {
	set, st, err := env.deployedStack(ctx)
	if err != nil {
		r.Fail(err)
		return
	}
	o := env.Soak
	o.Duration, o.Rate = cmp.Or(o.Duration, soakDefaultDuration), cmp.Or(o.Rate, soakDefaultRate)
	loads := soakLoads(set, o, env)
	smp, err := newSoakSampler(set, st.Endpoints())
	if err != nil {
		r.Fail(err)
		return
	}
	defer smp.close()
	env.Progressf("soak: %.0f msg/s for %s (%d loads side by side), footprint sampled every %s", o.Rate, o.Duration, len(loads), soakSampleEvery)
	sctx, stop := context.WithCancel(ctx)
	done := smp.run(sctx, soakSampleEvery, func(s soakSample) { env.Progressf("soak: %s", soakLine(s)) })
	reps, errs := runSoakLoads(ctx, loads)
	stop()
	<-done
	if err := errors.Join(errs...); err != nil {
		r.Fail(err)
		return
	}
	for i, rep := range reps {
		for _, v := range rep.Verdicts {
			r.Check(loads[i].Label+": "+v.Name, v.Passed, "%s", v.Detail)
		}
	}
	samples, failed := smp.snapshot()
	judgeFootprint(r, samples, failed)
	judgeDeployment(ctx, r, set, env)
	auditGate{}.Run(ctx, env, r)
	writeSoakReport(env, r, samples, reps) // last: its table shows every check above
}

// soakLoads are the loads of a soak: 1:1 pairs, a group share and, where rooms are deployed, a
// room share, each its own loadgen run over its own users.
func soakLoads(set *svc.Set, o SoakOptions, env *Env) []loadgen.Config {
	base := loadgen.Config{Gateway: set.Addrs.GatewayTCP, MoreGateways: set.GatewayTCPs()[1:],
		TokenSecret: []byte(set.Addrs.TokenSecret), Duration: o.Duration, Window: 10 * time.Second}
	direct := base
	direct.Rate, direct.Connections, direct.Label = o.Rate*(1-soakGroupShare-soakRoomShare), soakConnections, "soak 1:1"
	direct.SDKClientsPercent, direct.SDKLane, direct.Progress = soakSDKPercent, sdklane.New(), env.Progress
	group := base
	group.Mode, group.GroupSize, group.Connections = loadgen.ModeGroup, soakGroupSize, 5*soakGroupSize
	group.Rate, group.Label = o.Rate*soakGroupShare, fmt.Sprintf("soak groups of %d", soakGroupSize)
	loads := []loadgen.Config{direct, group}
	if set.Rooms() {
		room := base
		room.Mode, room.RoomSize, room.Connections = loadgen.ModeRoom, soakRoomSize, 5*soakRoomSize
		room.Rate, room.Label = o.Rate*soakRoomShare, fmt.Sprintf("soak rooms of %d", soakRoomSize)
		loads = append(loads, room)
	}
	return loads
}

// runSoakLoads runs the loads side by side and waits for all of them.
func runSoakLoads(ctx context.Context, loads []loadgen.Config) ([]*loadgen.Report, []error) {
	reps, errs := make([]*loadgen.Report, len(loads)), make([]error, len(loads))
	var wg sync.WaitGroup
	for i, cfg := range loads {
		wg.Go(func() {
			reps[i], errs[i] = loadgen.Run(ctx, cfg)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("gates: soak: %s: %w", cfg.Label, errs[i])
			}
		})
	}
	wg.Wait()
	return reps, errs
}

// soakLine is a progress line: the sum over the processes and the stores.
func soakLine(s soakSample) string {
	var rss, fds, gor float64
	for _, p := range s.Procs {
		rss, fds, gor = rss+max(p.RSSBytes, 0), fds+max(p.OpenFDs, 0), gor+max(p.Goroutines, 0)
	}
	return fmt.Sprintf("%.0f s: services %.0f MiB RSS, %.0f fds, %.0f goroutines; redis-core %.0f MiB, redis-mailbox %.0f MiB, broker %.0f MiB on disk; %.0f commits",
		s.AtS, rss/(1<<20), fds, gor, s.RedisCoreBytes/(1<<20), s.RedisMailboxBytes/(1<<20), s.KafkaBytes/(1<<20), s.Commits)
}
