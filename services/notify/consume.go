package notify

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/backoff"
	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/presence"
	"github.com/qim-dev/qim/services/internal/pushtoken"
)

// pollMax bounds the qim.dispatch records of one batch.
const pollMax = 512

// directory is the presence directory behind a lock: the follower applies, the batch loop asks.
type directory struct {
	mu  sync.RWMutex
	dir *presence.Directory
}

func (d *directory) apply(es []presence.Entry) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, e := range es {
		d.dir.Apply(e)
	}
}

func (d *directory) online(tenant contract.TenantID, user contract.UserID) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return len(d.dir.Gateways(nil, tenant, user)) > 0
}

// positions stores where each qim.dispatch partition is processed up to.
type positions interface {
	Commit(ctx context.Context, partition int32, next int64) error
	CommitAll(ctx context.Context, next map[int32]int64) error
}

// loop is the batch loop: poll qim.dispatch, plan, look the registrations up, deliver, then
// store the positions. A failure of Redis or of the position commit retries the same batch
// (its done marks make the retry send only what was not accepted); the loop never skips one.
type loop struct {
	consumer *commitlog.PartitionConsumer
	pos      positions
	dir      *directory
	loaded   func() bool // the presence follower applied what qim.presence held at start
	rdb      *redis.Client
	del      *deliverer
	badges   *badges // nil: no badge
	shards   contract.ShardCount
	m        *metrics
	log      *slog.Logger
	retry    *backoff.Backoff
	failing  atomic.Bool // read by /healthz
}

func (l *loop) run(ctx context.Context) error {
	for !l.loaded() { // until then every user would look offline
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(50 * time.Millisecond):
		}
	}
	for {
		recs, err := l.consumer.Poll(ctx, pollMax)
		if ctx.Err() != nil {
			return nil //nolint:nilerr // a stop, not a failure: the positions hold what was done
		}
		if len(recs) > 0 {
			if berr := l.batch(ctx, recs); berr != nil {
				return berr
			}
		}
		if err != nil {
			return fmt.Errorf("notify: qim.dispatch: %w", err)
		}
	}
}

// batch handles one poll's records until their positions are stored, retrying with backoff.
func (l *loop) batch(ctx context.Context, recs []commitlog.Record) error {
	js := l.plan(recs)
	for {
		err := l.attempt(ctx, recs, js)
		if err == nil {
			l.retry.Reset()
			l.failing.Store(false)
			l.m.batches.Inc()
			return nil
		}
		if ctx.Err() != nil {
			return nil //nolint:nilerr // a stop: the batch is replayed from its stored position
		}
		l.m.batchFailures.Inc()
		if !l.failing.Swap(true) {
			l.log.Warn("notify: batch failed, retrying", "err", err)
		}
		select {
		case <-time.After(l.retry.Next()):
		case <-ctx.Done():
			return nil
		}
	}
}

// plan decodes the records and picks the recipients to wake. Registrations are looked up in
// attempt, so a retried batch sees the current ones.
func (l *loop) plan(recs []commitlog.Record) []offline {
	skipped := func(reason string, n int) { l.m.skipped.WithLabelValues(reason).Add(float64(n)) }
	var out []offline
	for _, r := range recs {
		d := &internalv1.GroupDispatch{}
		if err := proto.Unmarshal(r.Value, d); err != nil {
			l.m.badRecords.Inc()
			continue
		}
		tenant, err := contract.U128FromBytes(d.GetTenantId())
		if err != nil {
			l.m.badRecords.Inc()
			continue
		}
		out = append(out, plan(d, tenant, l.dir.online, skipped)...)
	}
	return out
}

func (l *loop) attempt(ctx context.Context, recs []commitlog.Record, to []offline) error {
	if len(to) > 0 {
		seen := map[pushtoken.User]bool{}
		users := make([]pushtoken.User, 0, len(to))
		for _, o := range to {
			if !seen[o.user] {
				seen[o.user] = true
				users = append(users, o.user)
			}
		}
		regs, bad, err := pushtoken.List(ctx, l.rdb, users)
		if err != nil {
			return err
		}
		l.m.badRegs.Add(float64(bad))
		registered := make([]pushtoken.User, 0, len(regs))
		for u := range regs {
			registered = append(registered, u)
		}
		badge := l.badges.of(ctx, registered, cap(l.del.sem))
		skipped := func(reason string, n int) { l.m.skipped.WithLabelValues(reason).Add(float64(n)) }
		if err := l.del.deliver(ctx, jobs(to, regs, badge, skipped)); err != nil {
			return err
		}
	}
	next := map[int32]int64{}
	for _, r := range recs {
		next[r.Partition] = max(next[r.Partition], r.Offset+1)
	}
	return l.pos.CommitAll(ctx, next) // one request for every partition of the batch
}
