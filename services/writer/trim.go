package writer

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/qim-dev/qim/services/internal/msgstore"
	"github.com/qim-dev/qim/services/internal/obs"
)

// Bounds of one trim tick: records per bucket per script call, and calls per bucket per tick.
// 256 buckets × 500 × 40 = 5.1 M records per tick, far above any write rate between ticks;
// the bound only keeps one tick from holding the Redis event loop for long stretches.
const (
	trimPerCall      = 500
	trimRoundsPerRun = 40
)

// Why a tick trimmed nothing (the qim_writer_history_trim_held label; a fixed set).
const (
	heldNoWatermark = "no_watermark" // the archiver never published T: nothing is known archived
	heldNothingDue  = "nothing_due"  // the cutoff is before any commit time
)

// trimCutoff is the rule of ADR-0022: the newest committed_at that may be trimmed is
// min(now − hot window, T − margin, oldest pending reservation − margin). It trims nothing
// without a watermark: an archiver that never ran has archived nothing.
func trimCutoff(nowMs int64, window, margin time.Duration, wm int64, haveWM bool, pending int64, havePending bool) (int64, string) {
	if !haveWM {
		return 0, heldNoWatermark
	}
	c := min(nowMs-window.Milliseconds(), wm-margin.Milliseconds())
	if havePending {
		c = min(c, pending-margin.Milliseconds())
	}
	if c <= 0 {
		return 0, heldNothingDue
	}
	return c, ""
}

// hotTrim runs the trim on a timer. It only ever deletes what the cutoff allows, and a failed
// tick loses nothing: the history stays in Redis until a later tick trims it.
type hotTrim struct {
	store    *msgstore.Store
	group    string
	window   time.Duration
	margin   time.Duration
	interval time.Duration
	log      *slog.Logger
	now      func() time.Time
	m        trimMetrics
}

type trimMetrics struct {
	trimmed  prometheus.Counter
	failures prometheus.Counter
	cutoff   prometheus.Gauge
	held     *prometheus.GaugeVec
}

func newTrimMetrics(reg *obs.Registry) trimMetrics {
	return trimMetrics{
		trimmed:  reg.Counter("qim_writer_history_trimmed_total", "Hot history records trimmed from Redis (archived and older than the hot window)."),
		failures: reg.Counter("qim_writer_history_trim_failures_total", "Trim ticks that failed (nothing is lost: the history stays in Redis)."),
		cutoff:   reg.Gauge("qim_writer_history_trim_cutoff_ms", "The newest committed_at (Unix ms) the last trim tick was allowed to trim."),
		held:     reg.GaugeVec("qim_writer_history_trim_held", "1 while the trim is held, by reason (no_watermark: the archiver published none).", "reason"),
	}
}

func (t *hotTrim) run(ctx context.Context) error {
	tick := time.NewTicker(t.interval)
	defer tick.Stop()
	for {
		if err := t.once(ctx); err != nil && ctx.Err() == nil {
			t.m.failures.Inc()
			t.log.Warn("writer: hot-tier trim failed; retrying on the next tick", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// once computes the cutoff from the archive watermark and the oldest pending commit, read in
// that order: a pending commit that appears after the first read was reserved after it, so its
// seq is above every seq the cutoff lets the trim touch.
func (t *hotTrim) once(ctx context.Context) error {
	wm, haveWM, err := t.store.ArchiveWatermarkMs(ctx, t.group)
	if err != nil {
		return err
	}
	pending, havePending, err := t.store.OldestPendingReserveMs(ctx)
	if err != nil {
		return err
	}
	cutoff, held := trimCutoff(t.now().UnixMilli(), t.window, t.margin, wm, haveWM, pending, havePending)
	for _, r := range []string{heldNoWatermark, heldNothingDue} {
		v := 0.0
		if r == held {
			v = 1
		}
		t.m.held.WithLabelValues(r).Set(v)
	}
	if held != "" {
		return nil
	}
	t.m.cutoff.Set(float64(cutoff))
	for range trimRoundsPerRun {
		res, err := t.store.TrimHot(ctx, cutoff, trimPerCall)
		t.m.trimmed.Add(float64(res.Trimmed))
		if err != nil || !res.More || res.Trimmed == 0 {
			return err
		}
	}
	return nil
}
