package gates

import (
	"context"

	"github.com/qim-dev/qim/loadgen"
)

// callCounts are the stack's request counters at one instant: what both Redis servers executed
// and what every service wrote to the brokers. Either is nil when it could not be read; the
// report then says so instead of printing a figure.
type callCounts struct {
	redis redisCalls
	kafka kafkaRequests
}

// countCalls snapshots the counters before a measured run (nil without a stack).
func (g perfGate) countCalls(ctx context.Context, env *Env) *callCounts {
	if env.Stack == nil {
		return nil
	}
	st, err := env.Stack(ctx)
	if err != nil {
		return nil
	}
	c := &callCounts{}
	if c.redis, err = snapRedisCalls(ctx, st.Endpoints()); err != nil {
		env.Progressf("redis calls: %v", err)
	}
	if env.Deployment != nil {
		set, err := env.Deployment(ctx)
		if err == nil {
			c.kafka, err = snapKafkaRequests(ctx, kafkaClients(set))
		}
		if err != nil {
			env.Progressf("broker requests: %v", err)
		}
	}
	return c
}

// reportCalls records the Redis commands and broker requests per ACKed message of the run since
// before, each metric name after prefix (informational: the capacity levers are judged by them
// beside CPU, not gated).
func (g perfGate) reportCalls(ctx context.Context, env *Env, r *Result, prefix string, before *callCounts, rep *loadgen.Report) {
	if before == nil {
		return
	}
	after := g.countCalls(ctx, env)
	if after == nil {
		return
	}
	if before.redis != nil && after.redis != nil {
		env.Progressf("%s", redisPerMessage(r, prefix, before.redis, after.redis, rep.Counts.Acked))
	}
	if before.kafka != nil && after.kafka != nil {
		env.Progressf("%s", kafkaPerMessage(r, prefix, before.kafka, after.kafka, rep.Counts.Acked))
	}
}
