package fanout

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qim-dev/qim/services/internal/commitlog"
)

var errInjected = errors.New("injected fault")

// crashBeforeCommit stands in for the SIGKILL at failpoint.FanoutBeforeOffsetCommit: the batch
// is acknowledged, then the process ends before the position is stored.
type crashBeforeCommit struct {
	positionStore
	kill func()
}

func (c crashBeforeCommit) Commit(context.Context, int32, int64) error {
	c.kill()
	return errInjected
}

// A run killed between the acks and the commit leaves the position unmoved; the next run
// re-produces that batch with identical dispatch_id, payload_digest and bytes.
func TestFanoutCrashBeforeCommitReplaysBatch(t *testing.T) {
	const n, shards = 12, 8
	outbox, dlog := createTopic(t, "outbox", 1), createTopic(t, "dispatch", shards)
	recs := produceEnvelopes(t, outbox, n)
	cfg := testConfig(t, outbox, dlog, shards)

	svc := newService(t, cfg)
	ctx, kill := context.WithCancel(context.Background())
	defer kill()
	svc.wrapPositions = func(p positionStore) positionStore { return crashBeforeCommit{p, kill} }
	if err := svc.Run(ctx); err != nil {
		t.Fatalf("Run killed before its commit = %v, want nil (stopped)", err)
	}
	if off, ok := committed(t, cfg); ok {
		t.Fatalf("a position (%d) was committed by a run killed before its commit", off)
	}
	want := plannedDispatches(t, recs, shards)
	crashed := countDispatches(t, readDispatchLog(t, dlog), want)
	if len(crashed) == 0 {
		t.Fatal("the killed run acknowledged no batch")
	}

	run := startFanout(t, newService(t, cfg))
	run.waitPosition(t, n)
	if err := run.stop(); err != nil {
		t.Fatal(err)
	}
	counts := countDispatches(t, readDispatchLog(t, dlog), want) // byte-identical copies checked here
	for id := range want {
		if counts[id] != crashed[id]+1 {
			t.Fatalf("dispatch %x: %d copies before the restart, %d after, want one more", id, crashed[id], counts[id])
		}
	}
	if off, ok := committed(t, cfg); !ok || off != n {
		t.Fatalf("committed position (%d, %v), want %d", off, ok, n)
	}
}

// faultySink really produces every batch, then reports failure for the first `fail` attempts
// (the broker-acknowledged-but-client-timed-out case, the worst for duplicates). The attempt
// numbered `hold` waits for release before failing, so the test can look at /healthz.
type faultySink struct {
	dispatchSink
	fail, hold int64
	attempts   atomic.Int64
	held       chan struct{}
	release    chan struct{}
}

func (s *faultySink) ProduceBatch(ctx context.Context, recs []commitlog.Record) error {
	err := s.dispatchSink.ProduceBatch(ctx, recs)
	n := s.attempts.Add(1)
	if n == s.hold {
		close(s.held)
		<-s.release
	}
	if err == nil && n <= s.fail {
		return errInjected
	}
	return err
}

func healthz(t *testing.T, svc *Service) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + svc.MetricsAddr() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// Failed produce attempts keep the position unmoved and replay the same batch; after
// UnreadyAfter consecutive failures /healthz is 503, and green again once the batch commits.
func TestFanoutProduceFailureReplaysBatchAndTurnsUnready(t *testing.T) {
	const n, shards = 6, 8
	outbox, dlog := createTopic(t, "outbox", 1), createTopic(t, "dispatch", shards)
	recs := produceEnvelopes(t, outbox, n)
	cfg := testConfig(t, outbox, dlog, shards)
	cfg.UnreadyAfter = 2
	svc := newService(t, cfg)
	sink := &faultySink{fail: 3, hold: 3, held: make(chan struct{}), release: make(chan struct{})}
	svc.wrapSink = func(s dispatchSink) dispatchSink { sink.dispatchSink = s; return sink }
	run := startFanout(t, svc)

	select {
	case <-sink.held:
	case <-time.After(60 * time.Second):
		t.Fatal("third attempt never came")
	}
	if code, body := healthz(t, svc); code != http.StatusServiceUnavailable || !strings.Contains(body, "consecutive failed attempts") {
		t.Fatalf("healthz after 2 failed attempts = %d %q, want 503 naming the failures", code, body)
	}
	if svc.Position() != 0 {
		t.Fatalf("position moved to %d while the batch kept failing", svc.Position())
	}
	close(sink.release)
	run.waitPosition(t, n)
	if code, body := healthz(t, svc); code != http.StatusOK {
		t.Fatalf("healthz after the batch committed = %d %q", code, body)
	}
	if err := run.stop(); err != nil {
		t.Fatal(err)
	}
	if got := metricValue(t, svc, "qim_fanout_batch_failures_total"); got != 3 {
		t.Fatalf("qim_fanout_batch_failures_total = %v, want 3", got)
	}
	want := plannedDispatches(t, recs, shards)
	counts := countDispatches(t, readDispatchLog(t, dlog), want) // every copy byte-identical
	replayed := 0
	for id := range want {
		switch counts[id] {
		case 4: // produced by the three failed attempts and the successful one
			replayed++
		case 1:
		default:
			t.Fatalf("dispatch %x appears %d times, want 4 (first batch) or 1", id, counts[id])
		}
	}
	if replayed == 0 {
		t.Fatal("no dispatch was replayed")
	}
}

// failingPositions fails the first `fail` commits without storing anything.
type failingPositions struct {
	positionStore
	fail  int64
	calls atomic.Int64
}

func (p *failingPositions) Commit(ctx context.Context, part int32, next int64) error {
	if p.calls.Add(1) <= p.fail {
		return errInjected
	}
	return p.positionStore.Commit(ctx, part, next)
}

// A failed commit retries the commit alone: the acknowledged dispatches are durable, so
// re-producing them would only add duplicates. Each dispatch is in the log exactly once.
func TestFanoutCommitFailureRetriesOnlyTheCommit(t *testing.T) {
	const n, shards = 9, 8
	outbox, dlog := createTopic(t, "outbox", 1), createTopic(t, "dispatch", shards)
	recs := produceEnvelopes(t, outbox, n)
	cfg := testConfig(t, outbox, dlog, shards)
	svc := newService(t, cfg)
	fp := &failingPositions{fail: 2}
	svc.wrapPositions = func(p positionStore) positionStore { fp.positionStore = p; return fp }
	run := startFanout(t, svc)
	run.waitPosition(t, n)
	if err := run.stop(); err != nil {
		t.Fatal(err)
	}
	want := plannedDispatches(t, recs, shards)
	wantEach(t, countDispatches(t, readDispatchLog(t, dlog), want), want, 1)
	if got := metricValue(t, svc, "qim_fanout_batch_failures_total"); got != 2 {
		t.Fatalf("qim_fanout_batch_failures_total = %v, want 2", got)
	}
	if off, ok := committed(t, cfg); !ok || off != n {
		t.Fatalf("committed position (%d, %v), want %d", off, ok, n)
	}
}
