package e2e

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/gates/svc"
)

// TestGroupScenarios runs the group scenarios on a fresh stack (the developer loop; gate 4 runs
// them with every other scenario), then runs each scenario named by brokenServers through a
// proxy that breaks one group rule: each must fail there, or it could not fail at all. It starts
// the real stack and services, so it runs only when QIM_E2E_GROUPS is set:
//
//	QIM_E2E_GROUPS=1 go test ./gates/e2e -run GroupScenarios -v -timeout 20m
func TestGroupScenarios(t *testing.T) {
	if os.Getenv("QIM_E2E_GROUPS") == "" {
		t.Skip("set QIM_E2E_GROUPS=1 to run the group scenarios against a fresh stack")
	}
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
	set, err := svc.New(bin, st.Endpoints())
	if err != nil {
		t.Fatal(err)
	}
	if err := set.StartAll(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = set.StopAll() })
	ep := st.Endpoints()
	newEnv := func(gateway string) *Env {
		return NewEnv(gateway, []byte(set.Addrs.TokenSecret), ep.KafkaBrokers, ep.DispatchShards, set)
	}
	e := newEnv(set.Addrs.GatewayTCP)
	for _, sc := range GroupScenarios() {
		t.Run(sc.Name, func(t *testing.T) {
			sctx, cancel := context.WithTimeout(ctx, 90*time.Second)
			defer cancel()
			if err := sc.Run(sctx, e); err != nil {
				t.Fatal(err)
			}
		})
	}
	for _, b := range brokenServers() {
		t.Run("broken/"+b.name, func(t *testing.T) {
			proxy := startTamperProxy(t, set.Addrs.GatewayTCP, b.rewrite)
			sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			err := b.scenario(sctx, newEnv(proxy.Addr()))
			if err == nil {
				t.Fatalf("the scenario passed against a server whose behaviour is %q", b.name)
			}
			t.Logf("caught %q: %v", b.name, err)
		})
	}
}
