package gates

import (
	"context"

	dto "github.com/prometheus/client_model/go"

	"github.com/qim-dev/qim/gates/keyspace"
	"github.com/qim-dev/qim/gates/svc"
)

// Writer metrics that show the hot-tier trim at work (services/writer/trim.go).
const (
	metricTrimHeld    = "qim_writer_history_trim_held"
	metricTrimmed     = "qim_writer_history_trimmed_total"
	metricTrimFailure = "qim_writer_history_trim_failures_total"
)

// judgeTrimLive checks what bounds the trimmed families: the deployment's writer must run the
// trim (tiered backend) and must have an archive watermark to trim below. A writer on the redis
// backend has no trim metrics at all, which fails here: its hot history grows forever.
func judgeTrimLive(ctx context.Context, r *Result, env *Env, invs []*keyspace.Inventory) {
	positions := int64(0)
	for _, inv := range invs {
		for _, f := range inv.Families {
			if f.Trimmed != "" {
				positions += f.Positions
			}
		}
	}
	if positions == 0 {
		r.Check("hot-tier trim", true, "no trimmed positions in Redis: nothing for the trim to bound")
		return
	}
	if env == nil || env.Deployment == nil {
		r.Check("hot-tier trim", false, "%d hot history positions and no deployment to read the writer's trim metrics from", positions)
		return
	}
	set, err := env.Deployment(ctx)
	if err != nil {
		r.Check("hot-tier trim", false, "cannot reach the deployment to read the writer's trim metrics: %v", err)
		return
	}
	fams, err := svc.ScrapeMetrics(ctx, set.Addrs.Metrics[svc.Writer])
	if err != nil {
		r.Check("hot-tier trim", false, "writer /metrics: %v", err)
		return
	}
	held, ok := fams[metricTrimHeld]
	if !ok {
		r.Check("hot-tier trim", false, "%d hot history positions and the writer runs no trim (%s missing): "+
			"the redis backend never trims; run with a CQL node (QIM_MESSAGE_STORE_BACKEND=tiered)", positions, metricTrimHeld)
		return
	}
	noWM := labelled(held, "reason", "no_watermark")
	r.Metric("trim_held_no_watermark", noWM)
	r.Metric("trimmed_records", counterValue(fams[metricTrimmed]))
	r.Metric("trim_failures", counterValue(fams[metricTrimFailure]))
	r.Check("hot-tier trim", noWM == 0, "the writer trims the hot tier below the archive watermark (held for want of one: %v); "+
		"%v records trimmed, %v failed ticks", noWM == 1, counterValue(fams[metricTrimmed]), counterValue(fams[metricTrimFailure]))
}

// labelled is the value of the family's sample whose label name has value v (0 when absent).
func labelled(f *dto.MetricFamily, name, v string) float64 {
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == name && l.GetValue() == v {
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

func counterValue(f *dto.MetricFamily) float64 {
	total := 0.0
	for _, m := range f.GetMetric() {
		total += m.GetCounter().GetValue()
	}
	return total
}
