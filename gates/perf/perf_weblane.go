package perf

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/qim-dev/qim/gates"
	"github.com/qim-dev/qim/loadgen"
	"github.com/qim-dev/qim/loadgen/weblane"
)

// withWebLane returns newLane with share of its pairs driven by the TypeScript SDK under node
// (issue 39: the perf gate measures the browser SDK too), after building clients/web. Share 0
// returns newLane unchanged. Every run gets fresh lanes, as newLane promises.
func withWebLane(ctx context.Context, env *gates.Env, newLane func() loadgen.Lane, share float64) (func() loadgen.Lane, error) {
	if share <= 0 {
		return newLane, nil
	}
	if share > 1 {
		return nil, fmt.Errorf("gates: --web-sdk-share %v: a fraction in [0, 1]", share)
	}
	dir := filepath.Join(env.Root, "clients", "web")
	env.Progressf("building the TypeScript SDK for the web lane (%s)", dir)
	if err := weblane.Build(ctx, dir); err != nil {
		return nil, err
	}
	set, err := env.Deployment(ctx)
	if err != nil {
		return nil, err
	}
	url := "ws://" + set.Addrs.GatewayWS + "/ws"
	return func() loadgen.Lane {
		return loadgen.SplitLane(newLane(), weblane.New(weblane.Config{Dir: dir, URL: url}), share)
	}, nil
}
