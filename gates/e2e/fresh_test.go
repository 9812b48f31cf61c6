package e2e

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/gates/svc"
)

// freshDeployment is the developer loop's deployment: a fresh stack, this checkout's qim built,
// n instances of each scaled service started; all of it stops when the test ends.
func freshDeployment(t *testing.T, n int) (*svc.Set, stack.Endpoints) {
	t.Helper()
	ctx := context.Background()
	st := stack.NewProcess(stack.WithProgress(os.Stderr))
	if err := st.Up(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Down(ctx) })
	bin, err := svc.Build(ctx, "../..", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	set, err := svc.NewInstances(bin, st.Endpoints(), n)
	if err != nil {
		t.Fatal(err)
	}
	if err := set.StartAll(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = set.StopAll() })
	return set, st.Endpoints()
}

// runFresh runs scenarios on a fresh deployment when the environment variable envVar is set (to
// 2 for two instances of each scaled service, the gateways then spread over by user id); it is
// skipped otherwise. envVar is not a QIM_ name: the services inherit the environment and refuse
// QIM_ variables they do not know.
func runFresh(t *testing.T, envVar string, scenarios []Scenario) {
	switch os.Getenv(envVar) {
	case "":
		t.Skipf("set %s=1 (or 2: two instances of each scaled service) to run these scenarios against a fresh stack", envVar)
	case "2":
		runOn(t, 2, scenarios)
	default:
		runOn(t, 1, scenarios)
	}
}

func runOn(t *testing.T, n int, scenarios []Scenario) {
	ctx := context.Background()
	set, ep := freshDeployment(t, n)
	e := NewEnv(set.Addrs.GatewayTCP, []byte(set.Addrs.TokenSecret), ep.KafkaBrokers, ep.DispatchShards, set)
	e.RedisCore = ep.RedisCore
	if n > 1 {
		e.Gateways = set.GatewayTCPs()
	}
	for _, sc := range scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			sctx, cancel := context.WithTimeout(ctx, 90*time.Second)
			defer cancel()
			if err := sc.Run(sctx, e); err != nil {
				t.Fatal(err)
			}
		})
	}
}
