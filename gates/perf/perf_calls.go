package perf

import (
	"context"
	"errors"
	"fmt"

	"github.com/qim-dev/qim/gates"
	"github.com/qim-dev/qim/loadgen"
)

// checkRequestCounters names the check that the request counters could be read around a run.
const checkRequestCounters = "request counters"

// callCounts are the stack's request counters at one instant: what both Redis servers executed
// and what every service wrote to the brokers. Either is nil when it could not be read, and err
// says why: the report then fails a check instead of leaving the figure out, because a figure
// left out fails nothing (the archiver once exported no request counter, and every CQL-stack
// run, the release run's included, printed no broker requests per message without failing).
type callCounts struct {
	redis redisCalls
	kafka kafkaRequests
	err   error
}

// countCalls snapshots the counters before or after a measured run (nil without a stack).
func (g perfGate) countCalls(ctx context.Context, env *gates.Env) *callCounts {
	if env.Stack == nil {
		return nil
	}
	st, err := env.Stack(ctx)
	if err != nil {
		return &callCounts{err: fmt.Errorf("stack: %w", err)}
	}
	c := &callCounts{}
	var errs []error
	if c.redis, err = snapRedisCalls(ctx, st.Endpoints()); err != nil {
		errs = append(errs, fmt.Errorf("redis calls: %w", err))
	}
	if env.Deployment == nil {
		errs = append(errs, errors.New("broker requests: no deployment to scrape"))
	} else if set, err := env.Deployment(ctx); err != nil {
		errs = append(errs, fmt.Errorf("broker requests: %w", err))
	} else if c.kafka, err = snapKafkaRequests(ctx, kafkaClients(set)); err != nil {
		errs = append(errs, fmt.Errorf("broker requests: %w", err))
	}
	c.err = errors.Join(errs...)
	return c
}

// reportCalls records the Redis commands and broker requests per ACKed message of the run since
// before, each metric name after prefix. The figures are informational (the capacity levers are
// judged by them beside CPU), but reading them is checked: label "" is the measured run, which
// always records the check; a find-max step (label "step 500 msg/s") records it only when it
// fails, so the ladder's report stays one check per step.
func (g perfGate) reportCalls(ctx context.Context, env *gates.Env, r *gates.Result, prefix, label string, before *callCounts, rep *loadgen.Report) {
	if before == nil {
		return
	}
	recordCalls(env, r, prefix, label, before, g.countCalls(ctx, env), rep.Counts.Acked)
}

// recordCalls is reportCalls once both snapshots are taken (after nil: no stack any more).
func recordCalls(env *gates.Env, r *gates.Result, prefix, label string, before, after *callCounts, acked int64) {
	name := checkRequestCounters
	if label != "" {
		name = label + " " + checkRequestCounters
	}
	if after == nil {
		r.Check(name, false, "no counters after the run: the stack is gone")
		return
	}
	if before.redis != nil && after.redis != nil {
		env.Progressf("%s", redisPerMessage(r, prefix, before.redis, after.redis, acked))
	}
	if before.kafka != nil && after.kafka != nil {
		env.Progressf("%s", kafkaPerMessage(r, prefix, before.kafka, after.kafka, acked))
	}
	var errs []error
	if before.err != nil {
		errs = append(errs, fmt.Errorf("before the run: %w", before.err))
	}
	if after.err != nil {
		errs = append(errs, fmt.Errorf("after the run: %w", after.err))
	}
	if err := errors.Join(errs...); err != nil {
		r.Check(name, false, "Redis commands or broker requests per message left out: %v", err)
		return
	}
	if label == "" {
		r.Check(name, true, "Redis commands and broker requests read before and after the run")
	}
}
