package perf

// The connect webhook under load (--connect-webhook): the frame lane logs in with opaque tokens
// the harness's stand-in webhook answers. Every user of a run logs in once with a token of its
// own, so each login is a webhook call rather than a cache hit, and the report gets the call
// latency the gateways measured (qim_gateway_connect_webhook_seconds), warm-ups included.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates"
	"github.com/qim-dev/qim/gates/svc"
	"github.com/qim-dev/qim/loadgen"
	"github.com/qim-dev/qim/services/authn/authntest"
)

// useWebhook makes base's frame lane mint webhook tokens; the deployment must trust the IdP.
func useWebhook(ctx context.Context, env *gates.Env, base *loadgen.Config) error {
	set, err := env.Deployment(ctx)
	if err != nil {
		return err
	}
	if set.IdP() == nil || !set.TrustsIdP() {
		return errors.New("gates: perf --connect-webhook: the deployment's gateways have no connect webhook (a binary from before JWT issuers?)")
	}
	tenant := base.Tenant.Lo
	base.Token = func(user contract.UserID, device string, ttl time.Duration) (string, error) {
		return authntest.HookToken(uint64(user), tenant, device, ttl), nil
	}
	return nil
}

// reportWebhook adds the gateways' webhook calls and their latency quantiles to r, and checks
// the webhook answered every call it got (none UNAVAILABLE, and at least one call).
func reportWebhook(ctx context.Context, env *gates.Env, r *gates.Result) {
	h, outcomes, err := scrapeHook(ctx, env, svc.Gateway, "qim_gateway_connect_webhook_seconds", "qim_gateway_connect_webhook_calls_total")
	if err != nil {
		r.Fail(err)
		return
	}
	p50, p99 := h.quantile(0.50)*1000, h.quantile(0.99)*1000
	r.Metric("connect_webhook_calls", float64(h.count))
	r.Metric("connect_webhook_p50_ms", p50)
	r.Metric("connect_webhook_p99_ms", p99)
	r.Check("connect webhook", h.count > 0 && outcomes["unavailable"] == 0,
		"%d calls (%.0f ok, %.0f refused, %.0f unavailable), p50 %.2f ms, p99 %.2f ms (bucket-interpolated, warm-ups included)",
		h.count, outcomes["ok"], outcomes["refused"], outcomes["unavailable"], p50, p99)
}

// scrapeHook sums a hook's latency histogram and its calls by outcome over every instance of
// service in the deployment.
func scrapeHook(ctx context.Context, env *gates.Env, service, histogram, calls string) (bucketSum, map[string]float64, error) {
	var h bucketSum
	outcomes := map[string]float64{}
	set, err := env.Deployment(ctx)
	if err != nil {
		return h, nil, err
	}
	for _, name := range set.Instance(service) {
		fams, err := svc.ScrapeMetrics(ctx, set.Addrs.Metrics[name])
		if err != nil {
			return h, nil, fmt.Errorf("gates: perf: scrape %s: %w", name, err)
		}
		h.add(fams[histogram])
		for _, m := range fams[calls].GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" {
					outcomes[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return h, outcomes, nil
}

// bucketSum merges the cumulative buckets of one histogram family across processes.
type bucketSum struct {
	count  uint64
	bounds []float64          // upper bounds, ascending
	cum    map[float64]uint64 // cumulative count per upper bound
}

func (b *bucketSum) add(f *dto.MetricFamily) {
	if b.cum == nil {
		b.cum = map[float64]uint64{}
	}
	for _, m := range f.GetMetric() {
		h := m.GetHistogram()
		b.count += h.GetSampleCount()
		for _, bk := range h.GetBucket() {
			ub := bk.GetUpperBound()
			if _, ok := b.cum[ub]; !ok {
				b.bounds = append(b.bounds, ub)
			}
			b.cum[ub] += bk.GetCumulativeCount()
		}
	}
	slices.Sort(b.bounds)
}

// quantile interpolates linearly inside the bucket holding rank q·count, as Prometheus's
// histogram_quantile does; beyond the last finite bound it answers that bound.
func (b *bucketSum) quantile(q float64) float64 {
	if b.count == 0 {
		return 0
	}
	rank := q * float64(b.count)
	lower, below := 0.0, uint64(0)
	for _, ub := range b.bounds {
		c := b.cum[ub]
		if float64(c) >= rank {
			if math.IsInf(ub, 1) {
				return lower
			}
			if c == below {
				return ub
			}
			return lower + (ub-lower)*(rank-float64(below))/float64(c-below)
		}
		lower, below = ub, c
	}
	return lower
}
