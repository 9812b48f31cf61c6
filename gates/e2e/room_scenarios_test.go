package e2e

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestRoomScenarios runs the room scenarios on a fresh stack (the developer loop; gate 4 runs
// them with every other scenario). It starts the real stack and services, so it runs only when
// E2E_ROOMS is set (to 2 for two instances of each scaled service):
//
//	E2E_ROOMS=1 go test ./gates/e2e -run RoomScenarios -v -timeout 20m
func TestRoomScenarios(t *testing.T) {
	if os.Getenv("E2E_ROOMS") == "" {
		t.Skip("set E2E_ROOMS=1 to run the room scenarios against a fresh stack")
	}
	ctx := context.Background()
	n := 1
	if os.Getenv("E2E_ROOMS") == "2" {
		n = 2 // two gateways and two RoomWriters
	}
	set, ep := freshDeployment(t, n)
	e := NewEnv(set.Addrs.GatewayTCP, []byte(set.Addrs.TokenSecret), ep.KafkaBrokers, ep.DispatchShards, set)
	e.RedisCore = ep.RedisCore
	if n > 1 {
		e.Gateways = set.GatewayTCPs()
	}
	for _, sc := range RoomScenarios() {
		t.Run(sc.Name, func(t *testing.T) {
			sctx, cancel := context.WithTimeout(ctx, 90*time.Second)
			defer cancel()
			if err := sc.Run(sctx, e); err != nil {
				t.Fatal(err)
			}
		})
	}
}
