package audit

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qim-dev/qim/services/mailbox/mailboxstore"
)

// waitPoll is how often WaitCaughtUp re-reads positions. It is a polling period for a condition
// that is then checked exactly; it never widens what counts as caught up.
const waitPoll = 100 * time.Millisecond

// NotCaughtUpError says which consumer did not reach its log end within the bound.
type NotCaughtUpError struct {
	Who    string // "fanout group <g>" or "mailbox shard <n>"
	At     int64  // its position: the next Outbox offset, or the last materialized dispatch offset
	Want   int64
	Waited time.Duration
}

func (e *NotCaughtUpError) Error() string {
	return fmt.Sprintf("audit: %s at %d, not caught up with %d after %s", e.Who, e.At, e.Want, e.Waited.Round(time.Millisecond))
}

// WaitCaughtUp waits, at most within in total, until the fanout group's committed Outbox
// position reaches the Outbox end read when the wait starts, then until every shard's
// watermark reaches the end of its dispatch partition read after that (skipped without
// cfg.Mailbox). It returns those ends, for Range.Ends: every dispatch of a record below the
// Outbox end is then below the dispatch ends (the fanout commits its position only after the
// batch's dispatches are acknowledged, docs/architecture.md invariant 6), and every one of them
// is at or below a watermark. On timeout it returns a *NotCaughtUpError: fail closed.
func WaitCaughtUp(ctx context.Context, cfg Config, group string, within time.Duration) (*Ends, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if group == "" {
		return nil, fmt.Errorf("%w: no fanout group", ErrConfig)
	}
	cl, err := kgo.NewClient(cfg.seeds()...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	start := time.Now()
	deadline := start.Add(within)
	oEnd, err := listed(adm.ListEndOffsets(ctx, cfg.OutboxTopic))
	if err != nil {
		return nil, fmt.Errorf("audit: end of %s: %w", cfg.OutboxTopic, err)
	}
	ends := &Ends{Outbox: oEnd[0]}
	if err := waitFanout(ctx, adm, cfg.OutboxTopic, group, ends.Outbox, start, deadline); err != nil {
		return nil, err
	}
	if ends.Dispatch, err = listed(adm.ListEndOffsets(ctx, cfg.DispatchTopic)); err != nil {
		return nil, fmt.Errorf("audit: ends of %s: %w", cfg.DispatchTopic, err)
	}
	if cfg.Mailbox != nil {
		store := mailboxstore.New(cfg.Mailbox, cfg.Shards)
		for p, end := range ends.Dispatch {
			if p >= int32(cfg.Shards) {
				continue // no shard reads it; the audit reports its records as on the wrong partition
			}
			if err := waitShard(ctx, store, p, end, start, deadline); err != nil {
				return nil, err
			}
		}
	}
	return ends, nil
}

func waitFanout(ctx context.Context, adm *kadm.Client, topic, group string, want int64, start, deadline time.Time) error {
	at := int64(-1)
	return waitFor(ctx, start, deadline, func() (bool, error) {
		os, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return false, fmt.Errorf("audit: position of fanout group %s: %w", group, err)
		}
		if o, ok := os.Lookup(topic, 0); ok && o.Err == nil {
			at = o.At
		}
		return want == 0 || at >= want, nil
	}, func(waited time.Duration) error {
		return &NotCaughtUpError{Who: "fanout group " + group, At: at, Want: want, Waited: waited}
	})
}

func waitShard(ctx context.Context, store *mailboxstore.Store, p int32, end int64, start, deadline time.Time) error {
	wm := int64(-1)
	return waitFor(ctx, start, deadline, func() (bool, error) {
		st, err := store.ReadShard(ctx, uint32(p))
		if err != nil {
			return false, fmt.Errorf("audit: watermark of shard %d: %w", p, err)
		}
		wm = st.Watermark
		return wm >= end-1, nil
	}, func(waited time.Duration) error {
		return &NotCaughtUpError{Who: fmt.Sprintf("mailbox shard %d", p), At: wm, Want: end - 1, Waited: waited}
	})
}

// waitFor polls done until it holds, fails, ctx ends or the deadline passes (late).
func waitFor(ctx context.Context, start, deadline time.Time, done func() (bool, error), late func(time.Duration) error) error {
	t := time.NewTicker(waitPoll)
	defer t.Stop()
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		if time.Now().After(deadline) {
			return late(time.Since(start))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("audit: waiting for the consumers: %w", ctx.Err())
		case <-t.C:
		}
	}
}
