package sdkit

import (
	"context"
	"testing"
	"time"

	"github.com/qim-dev/qim/gates/e2e"
	"github.com/qim-dev/qim/gates/itest"
)

// The SDK-driven e2e scenarios (gates/e2e.SDKScenarios and SDKSessionScenarios), run here against the package's real
// deployment so the SDK's own test run proves them too.
func TestITSDKScenarios(t *testing.T) {
	set := deployment(t)
	ep := itest.Endpoints(t)
	env := e2e.NewEnv(set.Addrs.GatewayTCP, []byte(set.Addrs.TokenSecret), ep.KafkaBrokers, ep.DispatchShards, set)
	for _, sc := range append(e2e.SDKScenarios(), e2e.SDKSessionScenarios()...) {
		t.Run(sc.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			start := time.Now()
			if err := sc.Run(ctx, env); err != nil {
				t.Fatal(err)
			}
			t.Logf("passed in %v", time.Since(start).Round(time.Millisecond))
		})
	}
}
