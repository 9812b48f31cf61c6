package mailbox

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/obs"
)

// fakeLog serves scripted polls and records Pause/Resume calls.
type fakeLog struct {
	mu      sync.Mutex
	batches [][]commitlog.Record
	paused  map[int32]bool
	pauses  []int32
	resumes []int32
}

func (f *fakeLog) Poll(ctx context.Context, _ int) ([]commitlog.Record, error) {
	f.mu.Lock()
	if len(f.batches) > 0 {
		b := f.batches[0]
		f.batches = f.batches[1:]
		f.mu.Unlock()
		return b, nil
	}
	f.mu.Unlock()
	<-ctx.Done()
	return nil, ctx.Err()
}

func (f *fakeLog) Pause(ps ...int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range ps {
		f.paused[p] = true
		f.pauses = append(f.pauses, p)
	}
}

func (f *fakeLog) Resume(ps ...int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range ps {
		f.paused[p] = false
		f.resumes = append(f.resumes, p)
	}
}

func (f *fakeLog) state() (map[int32]bool, []int32, []int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps(f.paused), slices.Clone(f.pauses), slices.Clone(f.resumes)
}

func maps(m map[int32]bool) map[int32]bool {
	out := map[int32]bool{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func recs(p int32, from, to int64) []commitlog.Record {
	var out []commitlog.Record
	for o := from; o < to; o++ {
		out = append(out, commitlog.Record{Partition: p, Offset: o})
	}
	return out
}

// A full FIFO pauses only its own partition, keeps every polled record in log order, and resumes
// the partition once the worker drained it; the other partition keeps flowing meanwhile.
func TestRouterPausesOnlyTheFullPartition(t *testing.T) {
	capacity := contract.MailboxShardFIFOCapacity
	hot, cold := newLane(3, capacity), newLane(7, capacity)
	fl := &fakeLog{paused: map[int32]bool{}, batches: [][]commitlog.Record{
		append(recs(3, 0, int64(capacity)+50), recs(7, 0, 5)...),
		recs(7, 5, 10),
	}}
	m := newMetrics(newTestRegistry())
	r := newRouter(fl, []*lane{hot, cold}, 4096, time.Millisecond, m)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.run(ctx) }()

	var coldGot []int64
	for len(coldGot) < 10 {
		select {
		case rec := <-cold.fifo:
			coldGot = append(coldGot, rec.Offset)
		case <-time.After(5 * time.Second):
			t.Fatalf("cold partition starved: got %v", coldGot)
		}
	}
	paused, pauses, _ := fl.state()
	if !paused[3] || paused[7] || !slices.Equal(pauses, []int32{3}) {
		t.Fatalf("paused %v (calls %v), want only partition 3", paused, pauses)
	}
	if got := testCounter(t, m.paused); got != 1 {
		t.Fatalf("qim_mailbox_dispatch_partition_paused_total = %v, want 1", got)
	}
	var hotGot []int64
	for len(hotGot) < capacity+50 {
		select {
		case rec := <-hot.fifo:
			hotGot = append(hotGot, rec.Offset)
		case <-time.After(5 * time.Second):
			t.Fatalf("hot partition stuck after %d records", len(hotGot))
		}
	}
	for i, o := range hotGot {
		if o != int64(i) {
			t.Fatalf("hot partition out of order at %d: %v", i, hotGot[max(0, i-2):i+1])
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if paused, _, resumes := fl.state(); !paused[3] && slices.Equal(resumes, []int32{3}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("drained partition was not resumed")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A record from a partition the node does not own stops the router.
func TestRouterRejectsUnownedPartition(t *testing.T) {
	fl := &fakeLog{paused: map[int32]bool{}, batches: [][]commitlog.Record{recs(9, 0, 1)}}
	r := newRouter(fl, []*lane{newLane(3, 4)}, 16, time.Millisecond, newMetrics(newTestRegistry()))
	if err := r.run(context.Background()); err == nil {
		t.Fatal("router accepted a record of an unowned partition")
	}
}

func newTestRegistry() *obs.Registry { return obs.NewRegistry("mailbox") }

func discardLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func testCounter(t testing.TB, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
