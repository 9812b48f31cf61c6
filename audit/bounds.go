package audit

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// bounds is a Range resolved against the logs.
type bounds struct {
	from, to int64 // Outbox offsets audited, [from, to)
	// outboxEnd is the Outbox end read after the dispatch ends: every dispatch below those ends
	// was planned from a record below it, so a dispatch naming an offset at or past it names a
	// record that does not exist.
	outboxEnd int64
	dispatch  []PartitionRange
}

// resolve turns rng into offsets. Whatever retention or a missing partition made unreadable is
// recorded as a gap on res and excluded from what is read; an error means the logs could not be
// listed at all.
func resolve(ctx context.Context, adm *kadm.Client, cfg *Config, rng Range, res *Result) (*bounds, error) {
	dStart, dEnd, err := dispatchOffsets(ctx, adm, cfg, rng, res)
	if err != nil {
		return nil, err
	}
	oStart, oEnd, err := outboxOffsets(ctx, adm, cfg.OutboxTopic, res)
	if err != nil {
		return nil, err
	}
	b := &bounds{outboxEnd: oEnd}
	if b.from, b.to, err = outboxRange(ctx, adm, cfg.OutboxTopic, rng, oEnd); err != nil {
		return nil, err
	}
	if b.to > oEnd {
		res.gap(Gap{Topic: cfg.OutboxTopic, From: oEnd, To: b.to, Reason: "the range ends past the Outbox end"})
		b.to = oEnd
	}
	fromZero := b.from == 0
	if b.from < oStart {
		res.gap(Gap{Topic: cfg.OutboxTopic, From: b.from, To: min(oStart, b.to),
			Reason: fmt.Sprintf("deleted by retention (log start %d): narrow the range to what is still in the log", oStart)})
		b.from = min(oStart, b.to)
	}
	starts, err := dispatchStarts(ctx, adm, cfg, rng, b, fromZero, dStart, dEnd, res)
	if err != nil {
		return nil, err
	}
	for _, p := range sortedParts(dEnd) {
		b.dispatch = append(b.dispatch, PartitionRange{Partition: p, From: min(starts[p], dEnd[p]), To: dEnd[p]})
	}
	res.Covered = Covered{OutboxFrom: b.from, OutboxTo: b.to, Dispatch: b.dispatch}
	return b, nil
}

// dispatchOffsets lists the dispatch partitions' start and end offsets (the ends pinned by rng
// when given). A shard without its partition is a gap: its dispatches can be in no log.
func dispatchOffsets(ctx context.Context, adm *kadm.Client, cfg *Config, rng Range, res *Result) (map[int32]int64, map[int32]int64, error) {
	ends, err := listed(adm.ListEndOffsets(ctx, cfg.DispatchTopic))
	if err != nil {
		return nil, nil, fmt.Errorf("audit: end offsets of %s: %w", cfg.DispatchTopic, err)
	}
	starts, err := listed(adm.ListStartOffsets(ctx, cfg.DispatchTopic))
	if err != nil {
		return nil, nil, fmt.Errorf("audit: start offsets of %s: %w", cfg.DispatchTopic, err)
	}
	if rng.Ends != nil {
		for p, e := range rng.Ends.Dispatch {
			if _, ok := ends[p]; ok && e <= ends[p] {
				ends[p] = e
			}
		}
	}
	for s := int32(0); s < int32(cfg.Shards); s++ {
		if _, ok := ends[s]; !ok {
			res.gap(Gap{Topic: cfg.DispatchTopic, Partition: s, From: -1, To: -1,
				Reason: fmt.Sprintf("partition missing: the topic has %d partitions for %d shards", len(ends), cfg.Shards)})
		}
	}
	for _, p := range sortedParts(ends) {
		if p >= int32(cfg.Shards) { // read anyway: its records count as wrong partition or mismatch
			res.gap(Gap{Topic: cfg.DispatchTopic, Partition: p, From: -1, To: -1,
				Reason: fmt.Sprintf("no shard reads this partition: the topic has %d partitions for %d shards (is the shard count right?)",
					len(ends), cfg.Shards)})
		}
	}
	return starts, ends, nil
}

// outboxOffsets lists the Outbox's one partition; any other partition is a gap, since the
// fanout reads partition 0 only.
func outboxOffsets(ctx context.Context, adm *kadm.Client, topic string, res *Result) (int64, int64, error) {
	ends, err := listed(adm.ListEndOffsets(ctx, topic))
	if err != nil {
		return 0, 0, fmt.Errorf("audit: end offset of %s: %w", topic, err)
	}
	starts, err := listed(adm.ListStartOffsets(ctx, topic))
	if err != nil {
		return 0, 0, fmt.Errorf("audit: start offset of %s: %w", topic, err)
	}
	if _, ok := ends[0]; !ok {
		return 0, 0, fmt.Errorf("audit: %s has no partition 0", topic)
	}
	for p, e := range ends {
		if p != 0 {
			res.gap(Gap{Topic: topic, Partition: p, From: starts[p], To: e, Reason: "the Outbox must have exactly one partition"})
		}
	}
	return starts[0], ends[0], nil
}

// outboxRange resolves rng's Outbox offsets (by time when Since or Until is set).
func outboxRange(ctx context.Context, adm *kadm.Client, topic string, rng Range, end int64) (int64, int64, error) {
	from, to := rng.From, rng.To
	if to <= 0 {
		to = end
		if rng.Ends != nil {
			to = min(rng.Ends.Outbox, end)
		}
	}
	var err error
	if !rng.Since.IsZero() {
		if from, err = offsetAt(ctx, adm, topic, rng.Since); err != nil {
			return 0, 0, err
		}
	}
	if !rng.Until.IsZero() {
		if to, err = offsetAt(ctx, adm, topic, rng.Until); err != nil {
			return 0, 0, err
		}
	}
	if from < 0 || from > to {
		return 0, 0, fmt.Errorf("%w: Outbox range [%d, %d)", ErrConfig, from, to)
	}
	return from, to, nil
}

func offsetAt(ctx context.Context, adm *kadm.Client, topic string, t time.Time) (int64, error) {
	l, err := listed(adm.ListOffsetsAfterMilli(ctx, t.UnixMilli(), topic))
	if err != nil {
		return 0, fmt.Errorf("audit: offset of %s at %v: %w", topic, t, err)
	}
	return l[0], nil
}

// dispatchStarts finds where each dispatch partition's reading starts. From Outbox offset 0 it
// is 0, and a partition whose log no longer starts at 0 is a gap. For a narrowed range it is the
// first record at or after the first committed record's time minus cfg.Lookback (the fanout
// produces a dispatch after reading its record, so only clock skew can put it earlier); a
// partition whose log starts exactly there may have lost records of the range to retention.
func dispatchStarts(ctx context.Context, adm *kadm.Client, cfg *Config, rng Range, b *bounds, fromZero bool,
	logStart, ends map[int32]int64, res *Result) (map[int32]int64, error) {
	out := map[int32]int64{}
	if fromZero {
		for p, s := range logStart {
			if s > 0 {
				res.gap(Gap{Topic: cfg.DispatchTopic, Partition: p, From: 0, To: s,
					Reason: "deleted by retention: dispatches of the range may be among them (narrow the range)"})
			}
			out[p] = s
		}
		return out, nil
	}
	if b.from >= b.to {
		return ends, nil // nothing committed in range: no dispatch to judge
	}
	t := rng.Since
	if t.IsZero() {
		var err error
		if t, err = recordTime(ctx, cfg.seeds(), cfg.OutboxTopic, b.from); err != nil {
			return nil, err
		}
	}
	at, err := listed(adm.ListOffsetsAfterMilli(ctx, t.Add(-cfg.Lookback).UnixMilli(), cfg.DispatchTopic))
	if err != nil {
		return nil, fmt.Errorf("audit: dispatch offsets at %v: %w", t, err)
	}
	for p, o := range at {
		if o <= logStart[p] && logStart[p] > 0 {
			res.gap(Gap{Topic: cfg.DispatchTopic, Partition: p, From: -1, To: logStart[p],
				Reason: "the partition's log starts inside the range's time: earlier dispatches of the range may have been deleted"})
		}
		out[p] = max(o, logStart[p])
	}
	return out, nil
}

// recordTime reads the timestamp of the record at off.
func recordTime(ctx context.Context, seeds []kgo.Opt, topic string, off int64) (time.Time, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.ConsumeResetOffset(kgo.NoResetOffset()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(off)}})}, seeds...)...)
	if err != nil {
		return time.Time{}, fmt.Errorf("audit: read %s@%d: %w", topic, off, err)
	}
	defer cl.Close()
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return time.Time{}, fmt.Errorf("audit: read %s@%d: %w", topic, off, err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return time.Time{}, fmt.Errorf("audit: read %s@%d: %w", topic, off, errs[0].Err)
		}
		if it := fs.RecordIter(); !it.Done() {
			return it.Next().Timestamp, nil
		}
	}
}

// listed flattens one topic's listed offsets, failing on any partition's error.
func listed(l kadm.ListedOffsets, err error) (map[int32]int64, error) {
	if err != nil {
		return nil, err
	}
	if err := l.Error(); err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	l.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out, nil
}

func sortedParts(m map[int32]int64) []int32 {
	ps := make([]int32, 0, len(m))
	for p := range m {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}
