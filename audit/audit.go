package audit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qim-dev/qim/contract"
)

// Run audits rng: the dispatch pass (Outbox ⋈ dispatch log), then, with cfg.Mailbox, the
// materialization pass. The error is only for a configuration that could not start an audit
// (ErrConfig); everything the audit could not read — a listing, a partition, a record, the
// mailbox Redis — is a gap in the Result, which then fails (Result.Err).
func Run(ctx context.Context, cfg Config, rng Range) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	res := newResult(cfg.Examples)
	defer func() {
		var n int64
		for _, p := range res.Passes {
			n += p.Records
		}
		res.finish(time.Since(start), n)
	}()
	cl, err := kgo.NewClient(cfg.seeds()...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	defer cl.Close()
	b, err := resolve(ctx, kadm.NewClient(cl), &cfg, rng, res)
	if errors.Is(err, ErrConfig) {
		return nil, err
	}
	if err != nil {
		res.gap(Gap{Partition: -1, From: -1, To: -1, Reason: fmt.Sprintf("cannot resolve the range: %v", err)})
		return res, nil
	}
	dispatchPass(ctx, &cfg, b, res)
	if cfg.Mailbox != nil {
		mailboxPass(ctx, &cfg, b, res)
	}
	return res, nil
}

func stopped(res *Result, pass string, err error) {
	res.gap(Gap{Partition: -1, From: -1, To: -1, Reason: fmt.Sprintf("%s pass stopped before the end of the range: %v", pass, err)})
}

func dispatchPass(ctx context.Context, cfg *Config, b *bounds, res *Result) {
	onGap := res.gap
	outbox, err := newLogReader(cfg.seeds(), cfg.OutboxTopic, []PartitionRange{{Partition: 0, From: b.from, To: b.to}}, onGap)
	if err != nil {
		stopped(res, "dispatch", err)
		return
	}
	defer outbox.close()
	disp, err := newLogReader(cfg.seeds(), cfg.DispatchTopic, b.dispatch, onGap)
	if err != nil {
		stopped(res, "dispatch", err)
		return
	}
	defer disp.close()
	j := &joiner{cfg: cfg, b: b, res: res, outbox: outbox, disp: disp, missing: map[contract.DispatchID]missingRef{}}
	j.meter = newMeter("dispatch", cfg, func() int64 { return outbox.read + disp.read })
	if err := j.run(ctx); err != nil {
		stopped(res, "dispatch", err)
	}
	j.finish()
	res.Passes["dispatch"] = j.meter.done()
}

func mailboxPass(ctx context.Context, cfg *Config, b *bounds, res *Result) {
	res.Mailbox = true
	c, err := newChecker(ctx, cfg, res, b.dispatch)
	if err != nil {
		stopped(res, "materialization", err)
		return
	}
	r, err := newLogReader(cfg.seeds(), cfg.DispatchTopic, b.dispatch, res.gap)
	if err != nil {
		stopped(res, "materialization", err)
		return
	}
	defer r.close()
	c.meter = newMeter("mailbox", cfg, func() int64 { return r.read })
	err = r.run(ctx, func(p int32, rec *kgo.Record) (bool, error) { return c.visit(ctx, p, rec) })
	if err == nil {
		err = c.flush(ctx)
	}
	if err != nil {
		stopped(res, "materialization", err)
	}
	res.Passes["mailbox"] = c.meter.done()
}
