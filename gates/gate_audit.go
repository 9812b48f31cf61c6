package gates

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/audit"
	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/fanout"
)

// auditCatchUp bounds gate 9's wait for the fanout and the mailbox watermarks (harness tuning):
// after a 180 s perf run at 1,000 msg/s both follow within seconds on the 2-core machine.
const auditCatchUp = 3 * time.Minute

// auditGate is gate 9, orphan-audit: the audit/ package over everything the run produced on its
// stack — every committed Outbox record has its dispatches, every dispatch its committed record,
// on its shard's partition with the record's content, and every dispatched entry is in its
// recipient's mailbox.
//
// Invariants: it audits only after the fanout's position reached the Outbox end and every
// shard's watermark its dispatch partition's end (bounded; a timeout fails the gate), and it
// audits exactly that prefix, so "not yet" cannot pass as "fine"; every failure kind is its own
// check, and the range must be complete; a run that committed nothing fails for lack of
// evidence rather than passing an empty audit.
//
// How: audit.WaitCaughtUp with the deployment's fanout group, then audit.Run pinned to the ends
// it returned, with the mailbox Redis; every count, the range and records/s become metrics.
//
// Rejected: counting deliveries at the clients (gate 5 does, for its own messages only); the
// audit reads the durable logs, so it also judges e2e's scenarios, restarts and replays.
type auditGate struct {
	catchUp time.Duration
	// wait and run default to audit.WaitCaughtUp and audit.Run (tests replace them).
	wait func(ctx context.Context, cfg audit.Config, group string, within time.Duration) (*audit.Ends, error)
	run  func(ctx context.Context, cfg audit.Config, rng audit.Range) (*audit.Result, error)
}

func (auditGate) Name() string { return "orphan-audit" }
func (auditGate) Title() string {
	return "every committed Outbox record has its dispatches and vice versa"
}

func (g auditGate) withDefaults() auditGate {
	if g.catchUp == 0 {
		g.catchUp = auditCatchUp
	}
	if g.wait == nil {
		g.wait = audit.WaitCaughtUp
	}
	if g.run == nil {
		g.run = audit.Run
	}
	return g
}

func (g auditGate) Run(ctx context.Context, env *Env, r *Result) {
	g = g.withDefaults()
	_, st, err := env.deployedStack(ctx) // the deployment: the services whose work is judged
	if err != nil {
		r.Fail(err)
		return
	}
	ep := st.Endpoints()
	shards, err := contract.NewShardCount(ep.DispatchShards)
	if err != nil {
		r.Fail(fmt.Errorf("gates: stack dispatch shards: %w", err))
		return
	}
	ropts, err := ep.RedisOptions(ep.RedisMailbox)
	if err != nil {
		r.Fail(err)
		return
	}
	security, err := ep.KafkaOpts() // seeds included: the same seeds again are harmless
	if err != nil {
		r.Fail(err)
		return
	}
	rdb := redis.NewClient(ropts)
	defer rdb.Close()
	cfg := audit.Config{Brokers: ep.KafkaBrokers, Security: security, Shards: shards, Mailbox: rdb, ProgressEvery: 5 * time.Second,
		Progress: func(p audit.Progress) {
			env.Progressf("audit %s pass: %d records, %.0f records/s", p.Pass, p.Records, p.Rate)
		}}
	env.Progressf("waiting (at most %s) for the fanout and the mailbox watermarks to reach the log ends", g.catchUp)
	start := time.Now()
	ends, err := g.wait(ctx, cfg, fanout.DefaultConfig().Group, g.catchUp)
	r.Metric("catch_up_s", time.Since(start).Seconds())
	if !r.Check("caught-up", err == nil, "fanout and mailbox watermarks at the log ends: %v", errOr(err, "yes")) {
		return
	}
	res, err := g.run(ctx, cfg, audit.Range{Ends: ends})
	if err != nil {
		r.Fail(err)
		return
	}
	auditReport(r, res)
}

// auditReport turns an audit result into the gate's metrics and checks.
func auditReport(r *Result, res *audit.Result) {
	c := res.Counts
	for name, v := range map[string]int64{"outbox_records": c.OutboxRecords, "expected_dispatches": c.ExpectedDispatches,
		"dispatch_records": c.DispatchRecords, "matched": c.Matched, "replayed_duplicates": c.ReplayedDuplicates,
		"outbox_duplicates": c.OutboxDuplicates, "outside_range": c.OutsideRange, "entries_checked": c.EntriesChecked,
		"materialized": c.Materialized, "expired": c.Expired, "mailbox_duplicates": c.MailboxDuplicate,
		"outbox_from": res.Covered.OutboxFrom, "outbox_to": res.Covered.OutboxTo,
		"dispatch_partitions": int64(len(res.Covered.Dispatch)), "gaps": int64(len(res.Incomplete))} {
		r.Metric(name, float64(v))
	}
	r.Metric("duration_s", res.Seconds)
	r.Metric("records_per_s", res.RecordsPS)
	r.Check("evidence", c.OutboxRecords > 0 && res.Mailbox, "%d committed records and %d dispatch records audited, "+
		"materialization checked: %v (nothing committed means nothing was judged: run gate 9 after the load gates)",
		c.OutboxRecords, c.DispatchRecords, res.Mailbox)
	r.Check("complete", res.Complete(), "Outbox [%d, %d), %d dispatch partitions; gaps: %s", res.Covered.OutboxFrom,
		res.Covered.OutboxTo, len(res.Covered.Dispatch), gapsText(res.Incomplete))
	for k, n := range res.Failures() {
		r.Metric(string(k), float64(n))
	}
	for _, k := range []audit.Kind{audit.KindCommittedWithoutDispatch, audit.KindDispatchWithoutCommit, audit.KindMismatch,
		audit.KindWrongPartition, audit.KindNotMaterialized, audit.KindNotYet} {
		n := res.Failures()[k]
		r.Check(strings.ReplaceAll(string(k), "_", "-"), n == 0, "%d%s", n, examplesText(res.Examples[k]))
	}
}

func gapsText(gs []audit.Gap) string {
	if len(gs) == 0 {
		return "none"
	}
	parts := make([]string, len(gs))
	for i, g := range gs {
		parts[i] = fmt.Sprintf("%s[%d] [%d, %d) %s", g.Topic, g.Partition, g.From, g.To, g.Reason)
	}
	return strings.Join(parts, "; ")
}

func examplesText(ex []audit.Example) string {
	if len(ex) == 0 {
		return ""
	}
	parts := make([]string, len(ex))
	for i, e := range ex {
		parts[i] = fmt.Sprintf("dispatch %s (message %s) partition %d offset %d, Outbox offset %d: %s", e.DispatchID,
			e.MessageID, e.Partition, e.Offset, e.OutboxOffset, e.Detail)
	}
	return "; e.g. " + strings.Join(parts, "; ")
}

func errOr(err error, ok string) string {
	if err != nil {
		return err.Error()
	}
	return ok
}
