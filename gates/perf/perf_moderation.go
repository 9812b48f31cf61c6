package perf

// The moderation hook under load (--moderation-hook): the frame lane sends in the tenant whose
// SENDs the writers put to the harness's stand-in hook (svc.ModeratedTenant), so every one of its
// SEND_ACKs waits for a hook call, and the report gets the call latency the writers measured
// (qim_writer_moderation_seconds), warm-ups included. The SLO checks of the run then judge the
// SEND_ACK latency with the hook in it.

import (
	"context"
	"errors"

	"github.com/qim-dev/qim/gates"
	"github.com/qim-dev/qim/gates/svc"
	"github.com/qim-dev/qim/loadgen"
)

// useModeration moves base's frame lane into the moderated tenant; the deployment's writers must
// call the stand-in.
func useModeration(ctx context.Context, env *gates.Env, base *loadgen.Config) error {
	set, err := env.Deployment(ctx)
	if err != nil {
		return err
	}
	if !set.Moderates() {
		return errors.New("gates: perf --moderation-hook: the deployment's writers have no moderation hook (a binary from before QIM_MODERATION_URL?)")
	}
	base.Tenant = svc.ModeratedTenant
	return nil
}

// reportModeration adds the writers' hook calls and their latency quantiles to r, and checks the
// hook answered every call it got with an allow (the load's bodies are never rejected).
func reportModeration(ctx context.Context, env *gates.Env, r *gates.Result) {
	h, outcomes, err := scrapeHook(ctx, env, svc.Writer, "qim_writer_moderation_seconds", "qim_writer_moderation_calls_total")
	if err != nil {
		r.Fail(err)
		return
	}
	p50, p99 := h.quantile(0.50)*1000, h.quantile(0.99)*1000
	r.Metric("moderation_hook_calls", float64(h.count))
	r.Metric("moderation_hook_p50_ms", p50)
	r.Metric("moderation_hook_p99_ms", p99)
	r.Check("moderation hook", h.count > 0 && outcomes["allow"] == float64(h.count),
		"%d calls (%.0f allowed, %.0f rejected, %.0f rewritten, %.0f unavailable), p50 %.2f ms, p99 %.2f ms (bucket-interpolated, warm-ups included)",
		h.count, outcomes["allow"], outcomes["reject"], outcomes["rewrite"], outcomes["unavailable"], p50, p99)
}
