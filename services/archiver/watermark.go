package archiver

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/services/internal/keyfamily"
	"github.com/qim-dev/qim/services/internal/msgstore"
)

// WatermarkKey is the core Redis sorted set where T is published (member: the archiver's group,
// score: T in Unix ms); the writer's hot-tier trim reads it, and so do the chaos cells that hold
// the trim against it (msgstore owns the name).
const WatermarkKey = msgstore.ArchiveWatermarkKey

const watermarkKey = WatermarkKey

// KeyFamilies declares the key this package writes, for the redis-artifacts gate.
func KeyFamilies() []keyfamily.Family {
	return []keyfamily.Family{
		keyfamily.New("archiver.watermark", keyfamily.Core, watermarkKey, watermarkKey, "").WithExample(watermarkKey).
			Permanent("one per deployment: the archive watermark the hot-tier trim is bounded by; expired, it would read as nothing archived"),
	}
}

// watermark publishes the archive watermark T: every message that reached COMMITTED before T
// is in the archive (seed ADR-0018, decision 2).
//
// Invariants: T only rises (ZADD GT; a lost Redis second only makes it older, which makes the
// trim later, never earlier); T = T0 is published only once the committed position reached H0,
// the Outbox high watermark listed AFTER T0 was read. Why that is enough: a message COMMITTED
// before T0 was acknowledged by the Outbox before T0, so its offset is below any high watermark
// listed after T0, hence below H0, hence below the committed position.
//
// How: one probe (T0, H0) at a time, taken and resolved on the lag ticker (the same listing
// feeds the lag gauge), so T lags the position by about one tick and costs no extra request.
//
// Rejected: T = the commit time of the newest archived record. Outbox order is not commit-time
// order (the recovery loop publishes an old commit late), so an older, unarchived commit could
// hide below it.
type watermark struct {
	rdb   redis.Cmdable
	group string
	l     *loop
	m     *metrics
	zadd  func(ctx context.Context, ms int64) error // ZADD GT in production; tests record it

	probeT0 time.Time
	probeH0 int64 // -1: no probe pending
	t       atomic.Int64
}

func newWatermark(rdb redis.Cmdable, group string, l *loop, m *metrics) *watermark {
	w := &watermark{rdb: rdb, group: group, l: l, m: m, probeH0: -1}
	w.zadd = func(ctx context.Context, ms int64) error {
		return rdb.ZAddGT(ctx, watermarkKey, redis.Z{Score: float64(ms), Member: group}).Err()
	}
	return w
}

// load reads the published T (0 when none), so the lag gauge is right from the start.
func (w *watermark) load(ctx context.Context) error {
	v, err := w.rdb.ZScore(ctx, watermarkKey, w.group).Result()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("archiver: read archive watermark: %w", err)
	}
	w.t.Store(int64(v))
	w.m.watermark.Set(v)
	return nil
}

// tick resolves the pending probe if the position reached it, then takes the next probe.
func (w *watermark) tick(ctx context.Context) {
	if w.probeH0 >= 0 && w.l.next.Load() >= w.probeH0 {
		if err := w.publish(ctx, w.probeT0); err != nil {
			w.m.failures.WithLabelValues("watermark").Inc()
			w.l.log.Warn("archiver: publish archive watermark; retrying on the next tick", "err", err)
			return // keep the probe: it is still valid, only the publish failed
		}
		w.probeH0 = -1
	}
	t0 := time.Now()
	wm, err := w.l.src.Watermarks(ctx)
	if err != nil {
		return // advisory: the batch loop reports real failures
	}
	b, ok := wm[outboxPartition]
	if !ok {
		return
	}
	if b.High > w.l.high.Load() {
		w.l.high.Store(b.High)
	}
	if w.probeH0 < 0 {
		w.probeT0, w.probeH0 = t0, b.High
	}
}

func (w *watermark) publish(ctx context.Context, t0 time.Time) error {
	ms := t0.UnixMilli()
	if err := w.zadd(ctx, ms); err != nil {
		return fmt.Errorf("archiver: ZADD GT %s %s %d: %w", watermarkKey, w.group, ms, err)
	}
	if ms > w.t.Load() {
		w.t.Store(ms)
		w.m.watermark.Set(float64(ms))
	}
	return nil
}

// lagSeconds is now − T; NaN before any watermark exists (nothing is known to be archived).
func (w *watermark) lagSeconds() float64 {
	t := w.t.Load()
	if t == 0 {
		return math.NaN()
	}
	return time.Since(time.UnixMilli(t)).Seconds()
}

// run ticks until ctx ends.
func (w *watermark) run(ctx context.Context, every time.Duration) {
	tk := time.NewTicker(every)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
			w.tick(ctx)
		}
	}
}
