package fanout

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/commitlog"
)

// ackOrder wraps the real sink and position store and records, at every commit, whether every
// dispatch planned from the records below the committed position had been acknowledged.
type ackOrder struct {
	mu         sync.Mutex
	ackedUpTo  int64 // highest Outbox offset whose batch ProduceBatch acknowledged
	commits    int
	violations []string
}

type orderSink struct {
	dispatchSink
	o *ackOrder
}

func (s orderSink) ProduceBatch(ctx context.Context, recs []commitlog.Record) error {
	err := s.dispatchSink.ProduceBatch(ctx, recs)
	if err != nil {
		return err
	}
	s.o.mu.Lock()
	defer s.o.mu.Unlock()
	for _, r := range recs {
		var d internalv1.GroupDispatch
		if proto.Unmarshal(r.Value, &d) == nil && d.GetSourceOffset() > s.o.ackedUpTo {
			s.o.ackedUpTo = d.GetSourceOffset()
		}
	}
	return nil
}

type orderPositions struct {
	positionStore
	o *ackOrder
}

func (p orderPositions) Commit(ctx context.Context, partition int32, next int64) error {
	p.o.mu.Lock()
	p.o.commits++
	if next-1 > p.o.ackedUpTo {
		p.o.violations = append(p.o.violations, fmt.Sprintf("commit %d with dispatches acked only through %d", next, p.o.ackedUpTo))
	}
	p.o.mu.Unlock()
	return p.positionStore.Commit(ctx, partition, next)
}

func (o *ackOrder) install(svc *Service) {
	o.ackedUpTo = -1
	svc.wrapSink = func(s dispatchSink) dispatchSink { return orderSink{s, o} }
	svc.wrapPositions = func(p positionStore) positionStore { return orderPositions{p, o} }
}

// Every planned dispatch of N envelopes lands exactly once, on its shard's partition, byte-equal
// to an independent plan; the committed position is N; no position was committed before the
// dispatches below it were acknowledged.
func TestFanoutDispatchesEveryRecordOnce(t *testing.T) {
	const n, shards = 200, 64
	outbox, dlog := createTopic(t, "outbox", 1), createTopic(t, "dispatch", shards)
	recs := produceEnvelopes(t, outbox, n)
	cfg := testConfig(t, outbox, dlog, shards)
	cfg.BatchSize = 32
	svc := newService(t, cfg)
	var order ackOrder
	order.install(svc)
	run := startFanout(t, svc)
	run.waitPosition(t, n)
	if lag := svc.coord.Load().lag(); lag != 0 {
		t.Errorf("outbox lag %d after dispatching everything", lag)
	}
	if err := run.stop(); err != nil {
		t.Fatalf("Run = %v", err)
	}
	want := plannedDispatches(t, recs, shards)
	got := readDispatchLog(t, dlog)
	wantEach(t, countDispatches(t, got, want), want, 1)
	if len(got) != len(want) {
		t.Fatalf("dispatch log has %d records, %d planned", len(got), len(want))
	}
	if off, ok := committed(t, cfg); !ok || off != n {
		t.Fatalf("committed position (%d, %v), want %d", off, ok, n)
	}
	if order.commits == 0 || len(order.violations) > 0 {
		t.Fatalf("%d commits, order violations: %v", order.commits, order.violations)
	}
	if batches := metricValue(t, svc, "qim_fanout_batches_total"); int(batches) != order.commits {
		t.Errorf("%d commits for %v batches, want one per batch (the default CommitInterval 0)", order.commits, batches)
	}
	if got := metricValue(t, svc, "qim_fanout_records_total"); got != n {
		t.Errorf("qim_fanout_records_total = %v, want %d", got, n)
	}
	if got := metricValue(t, svc, "qim_fanout_dispatches_total"); int(got) != len(want) {
		t.Errorf("qim_fanout_dispatches_total = %v, want %d", got, len(want))
	}
}

// With a long CommitInterval, acknowledged batches wait for one commit instead of one each: every
// dispatch lands while the stored position lags behind, no commit ever covers an unacknowledged
// dispatch, and a clean stop commits the whole acknowledged position.
func TestFanoutCommitIntervalCoversManyBatchesAndStopFlushes(t *testing.T) {
	const n, shards = 24, 8
	outbox, dlog := createTopic(t, "outbox", 1), createTopic(t, "dispatch", shards)
	recs := produceEnvelopes(t, outbox, n)
	cfg := testConfig(t, outbox, dlog, shards)
	cfg.BatchSize, cfg.CommitInterval = 4, 10*time.Second
	svc := newService(t, cfg)
	var order ackOrder
	order.install(svc)
	run := startFanout(t, svc)
	want := plannedDispatches(t, recs, shards)
	deadline := time.Now().Add(60 * time.Second)
	for metricValue(t, svc, "qim_fanout_records_total") < n {
		if time.Now().After(deadline) {
			t.Fatal("not every record was dispatched after 60 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if pos := svc.Position(); pos >= n {
		t.Fatalf("position %d while running, want it below %d (the interval holds commits back)", pos, n)
	}
	order.mu.Lock()
	early := order.commits
	order.mu.Unlock()
	if err := run.stop(); err != nil {
		t.Fatalf("Run = %v", err)
	}
	wantEach(t, countDispatches(t, readDispatchLog(t, dlog), want), want, 1)
	if off, ok := committed(t, cfg); !ok || off != n {
		t.Fatalf("committed position (%d, %v) after stop, want %d", off, ok, n)
	}
	if early > 1 || order.commits != early+1 || len(order.violations) > 0 {
		t.Fatalf("%d commits while running, %d in all (want ≤ 1 and one more at stop), violations: %v",
			early, order.commits, order.violations)
	}
}

// A restart continues from the committed position without reprocessing; a position committed
// back by hand replays exactly the records above it, byte for byte.
func TestFanoutRestartResumesAndReplaysFromStoredPosition(t *testing.T) {
	const shards = 8
	outbox, dlog := createTopic(t, "outbox", 1), createTopic(t, "dispatch", shards)
	cfg := testConfig(t, outbox, dlog, shards)
	first := produceEnvelopes(t, outbox, 20)
	run := startFanout(t, newService(t, cfg))
	run.waitPosition(t, 20)
	if err := run.stop(); err != nil {
		t.Fatal(err)
	}

	all := append(first, produceEnvelopes(t, outbox, 15)...)
	run = startFanout(t, newService(t, cfg))
	run.waitPosition(t, 35)
	if err := run.stop(); err != nil {
		t.Fatal(err)
	}
	want := plannedDispatches(t, all, shards)
	wantEach(t, countDispatches(t, readDispatchLog(t, dlog), want), want, 1)

	// Move the stored position back to 10: records 10..34 are dispatched again, identically.
	commitPosition(t, cfg, 10)
	run = startFanout(t, newService(t, cfg))
	run.waitPosition(t, 35)
	if err := run.stop(); err != nil {
		t.Fatal(err)
	}
	counts := countDispatches(t, readDispatchLog(t, dlog), want)
	for id, w := range want {
		if n := counts[id]; (w.sourceOffset >= 10 && n != 2) || (w.sourceOffset < 10 && n != 1) {
			t.Fatalf("dispatch of outbox offset %d appears %d times after replaying from 10", w.sourceOffset, n)
		}
	}
	if off, ok := committed(t, cfg); !ok || off != 35 {
		t.Fatalf("committed position (%d, %v), want 35", off, ok)
	}
}

// The contract topics with default names: qim.outbox (1 partition) and qim.dispatch (the stack's
// shard count). The group is positioned at the current end first, so records other packages may
// have left in a shared stack are not this test's business.
func TestFanoutOnContractTopics(t *testing.T) {
	ep := itest.Endpoints(t)
	cfg := testConfig(t, "", "", ep.DispatchShards)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	adm, err := commitlog.NewAdmin(ep.KafkaBrokers)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	wm, err := adm.Watermarks(testCtx(t), contract.TopicOutbox)
	if err != nil {
		t.Fatal(err)
	}
	commitPosition(t, cfg, wm[0].High)
	svc := newService(t, cfg)
	run := startFanout(t, svc)
	recs := produceEnvelopes(t, contract.TopicOutbox, 10)
	run.waitPosition(t, recs[len(recs)-1].offset+1)
	if code, body := healthz(t, svc); code != http.StatusOK {
		t.Fatalf("healthz = %d %q", code, body)
	}
	resp, err := http.Get("http://" + svc.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, name := range []string{"qim_fanout_outbox_lag_records", "qim_fanout_dispatch_ack_wait_seconds_bucket",
		"qim_fanout_batch_cycle_seconds_count", "qim_fanout_unplannable_records_total"} {
		if !strings.Contains(string(page), name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	if err := run.stop(); err != nil {
		t.Fatal(err)
	}
	want := plannedDispatches(t, recs, ep.DispatchShards)
	counts := countDispatchesOf(t, readDispatchLog(t, contract.TopicDispatch), want)
	wantEach(t, counts, want, 1)
}
