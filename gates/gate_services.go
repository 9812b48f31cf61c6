package gates

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// servicesGate is gate 3: build qim and start every service on a fresh qim-it-* stack; each must
// report healthy (/healthz 200: dependencies reachable, invariant counters zero).
type servicesGate struct{}

func (servicesGate) Name() string  { return "services" }
func (servicesGate) Title() string { return "build and start all services on a fresh qim-it-* stack" }

func (servicesGate) Run(ctx context.Context, env *Env, r *Result) {
	start := time.Now()
	set, err := env.Deployment(ctx)
	if err != nil {
		r.Fail(err)
		return
	}
	r.Metric("deploy_seconds", time.Since(start).Seconds())
	r.Metric("instances", float64(set.Instances()))
	for _, name := range set.Services() {
		code, body := healthz(ctx, set.Addrs.Metrics[name])
		r.Check(name+" healthy", set.Running(name) && code == http.StatusOK, "pid running=%v, /healthz %d %s",
			set.Running(name), code, body)
		if set.ServesRPC(name) { // the mode the process says it serves, not the one it was given
			mode := set.RPCMode(name)
			r.Check(name+" internal RPC mTLS", mode == "mtls", "its log says rpc=%q", mode)
		}
	}
}

// healthz fetches a service's /healthz.
func healthz(ctx context.Context, addr string) (int, string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/healthz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return resp.StatusCode, fmt.Sprintf("%q", b)
}
