package chaos

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/svc"
	"github.com/qim-dev/qim/loadgen"
	"github.com/qim-dev/qim/services/archiver"
)

// Watch observes one cell's deployment beside its load and judges what it saw. It is started
// after the deployment and judged last, after the judges that wait for the pipeline (and the
// archive) to catch up, so it sees the whole recovery.
type Watch interface {
	start(ctx context.Context, t *Target)
	judge(ctx context.Context, res *CellResult, fr *faultRun, rep *loadgen.Report)
}

const (
	trimSampleEvery = 250 * time.Millisecond
	trimResumeWait  = 20 * time.Second // after the archive caught up: a few trim ticks and a watermark tick
)

// trimSample is one look at the writer's hot-tier trim and the archive watermark T.
type trimSample struct {
	at          time.Time
	trimmed     float64 // qim_writer_history_trimmed_total
	cutoffMs    float64 // qim_writer_history_trim_cutoff_ms of the last tick
	watermarkMs float64 // T in core Redis, read after the cutoff: T only rises, so the pair is safe
}

// trimWatch holds the writer's trim against the archive watermark for a whole cell.
//
// Invariants checked: at every sample the writer's cutoff is at least margin below T (a cutoff
// above it would trim history the archive may not hold); the trim actually ran before the fault
// (else the cell proves nothing about it); with frozenAfter, the trim count did not move from
// frozenAfter past the fault until the heal (T froze with the archive, so the trim must stop);
// after the heal and the archive's catch-up the trim moved again. With sendsGoOn, the sends
// offered while the fault was open were acknowledged at the offered rate: the commit path must
// not depend on the archive tier.
//
// Rejected: judging by the end state only. The archiver consumes the Outbox, not Redis, so an
// archive audit after the catch-up passes even if the trim ran ahead of T meanwhile; the hazard
// is the window in which a trimmed message was in neither tier, which only sampling sees.
type trimWatch struct {
	margin      time.Duration
	frozenAfter time.Duration
	sendsGoOn   bool

	t      *Target
	rdb    *redis.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	samples []trimSample
	errs    int
	lastErr error
}

func (w *trimWatch) start(ctx context.Context, t *Target) {
	w.t = t
	w.rdb = redis.NewClient(&redis.Options{Addr: t.Stack.Endpoints().RedisCore})
	ctx, w.cancel = context.WithCancel(ctx)
	w.done = sampleLoop(ctx, trimSampleEvery, w.sample)
}

// sampleLoop calls sample every period until ctx ends; the channel is closed once it returned.
func sampleLoop(ctx context.Context, every time.Duration, sample func(context.Context)) chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		tk := time.NewTicker(every)
		defer tk.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
				sample(ctx)
			}
		}
	}()
	return done
}

func (w *trimWatch) sample(ctx context.Context) {
	s, err := w.read(ctx)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			w.errs, w.lastErr = w.errs+1, err
		}
		return
	}
	w.samples = append(w.samples, s)
}

func (w *trimWatch) read(ctx context.Context) (trimSample, error) {
	s := trimSample{at: time.Now()}
	var err error
	if s.cutoffMs, err = w.t.Set.Metric(ctx, svc.Writer, "qim_writer_history_trim_cutoff_ms"); err != nil {
		return s, err
	}
	if s.trimmed, err = w.t.Set.Metric(ctx, svc.Writer, "qim_writer_history_trimmed_total"); err != nil {
		return s, err
	}
	v, err := w.rdb.ZScore(ctx, archiver.WatermarkKey, contract.GroupArchiver).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return s, fmt.Errorf("read the archive watermark: %w", err)
	}
	s.watermarkMs = v
	return s, nil
}

func (w *trimWatch) stop() []trimSample {
	w.cancel()
	<-w.done
	_ = w.rdb.Close()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.samples
}
