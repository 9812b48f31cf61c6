package gates

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/qim-dev/qim/gates/e2e"
)

// e2eGate is gate 4: the functional scenarios against the running deployment, through the real
// gateway with a frame-level client.
type e2eGate struct {
	scenarios func() []e2e.Scenario
}

func (e2eGate) Name() string  { return "e2e" }
func (e2eGate) Title() string { return "functional end-to-end scenarios through the real gateway" }

func (g e2eGate) Run(ctx context.Context, env *Env, r *Result) {
	set, st, err := env.deployedStack(ctx)
	if err != nil {
		r.Fail(err)
		return
	}
	ep := st.Endpoints()
	e := e2e.NewEnv(set.Addrs.GatewayTCP, []byte(set.Addrs.TokenSecret), ep.KafkaBrokers, ep.DispatchShards, set)
	e.CQL, e.RedisCore, e.Secure = ep.CQL, ep.RedisCore, ep.Secure
	list := g.scenarios
	if list == nil {
		list = func() []e2e.Scenario {
			// The instance scenarios first: they restart MailboxNodes, and judgeInstances reads
			// counters a restart zeroes, so the traffic it judges comes after them.
			return slices.Concat(e2e.InstancesScenarios(), e2e.Scenarios(), e2e.IdentityScenarios(), e2e.SessionScenarios(), e2e.GroupScenarios(), e2e.RoomScenarios(),
				e2e.SDKScenarios(), e2e.SDKSessionScenarios(), e2e.ProductScenarios(), e2e.TieredScenarios())
		}
	}
	passed, skipped := 0, 0
	for _, sc := range list() {
		sctx, cancel := context.WithTimeout(ctx, 90*time.Second)
		t := time.Now()
		err := sc.Run(sctx, e)
		cancel()
		took := time.Since(t).Round(time.Millisecond)
		if errors.Is(err, e2e.ErrSkipped) {
			skipped++
			r.Skip(sc.Name, "%v", err)
			env.Progressf("SKIPPED %s: %v", sc.Name, err)
			continue
		}
		if err != nil {
			r.Check(sc.Name, false, "failed after %s: %v", took, err)
			env.Progressf("FAIL %s (%s): %v", sc.Name, took, err)
			continue
		}
		passed++
		r.Check(sc.Name, true, "passed in %s", took)
		env.Progressf("pass %s (%s)", sc.Name, took)
	}
	judgeInstances(ctx, r, set)
	r.Metric("instances", float64(set.Instances()))
	r.Metric("scenarios_passed", float64(passed))
	r.Metric("scenarios_skipped", float64(skipped))
	r.Metric("scenarios_total", float64(len(list())))
}
