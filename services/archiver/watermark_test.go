package archiver

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/obs"
)

// highSource answers Watermarks with a settable high watermark; Poll is never called here.
type highSource struct{ high int64 }

func (h *highSource) Poll(context.Context, int) ([]commitlog.Record, error) { return nil, nil }
func (h *highSource) Watermarks(context.Context) (map[int32]commitlog.Bounds, error) {
	return map[int32]commitlog.Bounds{0: {High: h.high}}, nil
}

// T0 is published only once the committed position reached H0, the high watermark listed
// after T0 was read; before that the published value must not move, whatever the clock does.
func TestWatermarkPublishesT0OnlyOnceThePositionReachesH0(t *testing.T) {
	src := &highSource{high: 10}
	m := newMetrics(obs.NewRegistry("archiver"))
	l := newLoop(Config{OutboxTopic: "o", UnreadyAfter: 3, RetryBackoffMin: time.Millisecond, RetryBackoffMax: time.Millisecond}, slog.New(slog.NewTextHandler(io.Discard, nil)), src, nil, nil, m, 4, 4)
	w := newWatermark(nil, "g", l, m)
	var published []int64
	fail := false
	w.zadd = func(_ context.Context, ms int64) error {
		if fail {
			return errors.New("redis down")
		}
		published = append(published, ms)
		return nil
	}
	ctx := context.Background()
	t0 := time.Now()
	w.tick(ctx) // probe (T0 ≥ t0, H0 = 10); position 4: nothing to publish
	src.high = 25
	w.tick(ctx) // still below 10: the probe stays, no new probe
	l.next.Store(9)
	w.tick(ctx)
	if len(published) != 0 {
		t.Fatalf("published %v with the position (9) below H0 (10)", published)
	}
	l.next.Store(10)
	fail = true
	w.tick(ctx) // due, but the publish fails: the probe must survive
	fail = false
	w.tick(ctx)
	if len(published) != 1 || published[0] < t0.UnixMilli() || published[0] > time.Now().UnixMilli() {
		t.Fatalf("published %v, want one T0 taken at the first tick (>= %d)", published, t0.UnixMilli())
	}
	first := published[0]
	// The probe taken after that one carries H0 = 25: position 24 publishes nothing more.
	l.next.Store(24)
	w.tick(ctx)
	if len(published) != 1 || w.t.Load() != first {
		t.Fatalf("published %v at position 24 with H0 = 25", published)
	}
	l.next.Store(25)
	w.tick(ctx)
	if len(published) != 2 || published[1] < first {
		t.Fatalf("published %v, want a second, later T0", published)
	}
}
