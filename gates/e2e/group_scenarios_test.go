package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestGroupScenarios runs the group scenarios on a fresh stack (the developer loop; gate 4 runs
// them with every other scenario), then runs each scenario named by brokenServers through a
// proxy that breaks one group rule: each must fail there, or it could not fail at all. It starts
// the real stack and services, so it runs only when E2E_GROUPS is set (not a QIM_ name: the
// services inherit the environment and refuse QIM_ variables they do not know):
//
//	E2E_GROUPS=1 go test ./gates/e2e -run GroupScenarios -v -timeout 20m
func TestGroupScenarios(t *testing.T) {
	if os.Getenv("E2E_GROUPS") == "" {
		t.Skip("set E2E_GROUPS=1 to run the group scenarios against a fresh stack")
	}
	ctx := context.Background()
	set, ep := freshDeployment(t, 1)
	newEnv := func(gateway string) *Env {
		return NewEnv(gateway, []byte(set.Addrs.TokenSecret), ep.KafkaBrokers, ep.DispatchShards, set)
	}
	e := newEnv(set.Addrs.GatewayTCP)
	byName := map[string]Scenario{}
	passed := map[string]bool{}
	for _, sc := range GroupScenarios() {
		byName[sc.Name] = sc
		passed[sc.Name] = t.Run(sc.Name, func(t *testing.T) {
			sctx, cancel := context.WithTimeout(ctx, 90*time.Second)
			defer cancel()
			if err := sc.Run(sctx, e); err != nil {
				t.Fatal(err)
			}
		})
	}
	for _, b := range brokenServers() {
		t.Run("broken/"+b.name, func(t *testing.T) {
			sc, ok := byName[b.scenario]
			if !ok {
				t.Fatalf("no scenario %q", b.scenario)
			}
			if !passed[b.scenario] {
				t.Skipf("%s fails against the real server too, so its failure here would prove nothing", b.scenario)
			}
			proxy := startTamperProxy(t, set.Addrs.GatewayTCP, b.rewrite)
			sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			err := sc.Run(sctx, newEnv(proxy.Addr()))
			if err == nil || !strings.Contains(err.Error(), b.want) {
				t.Fatalf("%s against a server whose behaviour is %q: %v, want a failure reporting %q", b.scenario, b.name, err, b.want)
			}
			t.Logf("caught %q: %v", b.name, err)
		})
	}
}
