package commitlog

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/qim-dev/qim/gates/itest"
)

// benchLingers are the two settings the Outbox linger decision compares.
var benchLingers = []struct {
	name   string
	linger time.Duration
}{{"linger=1ms", time.Millisecond}, {"linger=0", 0}, {"linger=1ms#2", time.Millisecond}, {"linger=0#2", 0}}

// BenchmarkOutboxPipelined measures throughput: b.N 1 KiB records produced asynchronously, as
// fast as the buffer admits them, and the produce→ack latency of each (queueing included).
func BenchmarkOutboxPipelined(b *testing.B) {
	for _, l := range benchLingers {
		b.Run(l.name, func(b *testing.B) {
			p := benchProducer(b, l.linger)
			key, value := messageKey(b, runID(b), 1), make([]byte, 1024)
			h := hdrhistogram.New(1, int64(10*time.Second/time.Microsecond), 3)
			var mu sync.Mutex
			var wg sync.WaitGroup
			var failed error
			b.SetBytes(int64(len(key) + len(value)))
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				wg.Add(1)
				sent := time.Now()
				p.Produce(context.Background(), key, value, func(_ int64, err error) {
					us := time.Since(sent).Microseconds()
					mu.Lock()
					_ = h.RecordValue(max(us, 1))
					if err != nil && failed == nil {
						failed = err
					}
					mu.Unlock()
					wg.Done()
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			if failed != nil {
				b.Fatal(failed)
			}
			reportLatency(b, h, elapsed)
		})
	}
}

// BenchmarkOutboxClosedLoop models the writer: `conc` commits in flight, each waiting for its
// Outbox ack before the next (ProduceSync), so latency is the produce→ack time a SEND_ACK pays.
func BenchmarkOutboxClosedLoop(b *testing.B) {
	for _, conc := range []int{1, 8, 32} {
		for _, l := range benchLingers {
			b.Run(fmt.Sprintf("conc=%d/%s", conc, l.name), func(b *testing.B) { benchClosedLoop(b, conc, l.linger) })
		}
	}
}

func benchClosedLoop(b *testing.B, conc int, linger time.Duration) {
	{
		{
			p := benchProducer(b, linger)
			key, value := messageKey(b, runID(b), 2), make([]byte, 1024)
			h := hdrhistogram.New(1, int64(10*time.Second/time.Microsecond), 3)
			var mu sync.Mutex
			var wg sync.WaitGroup
			next := make(chan struct{}, b.N)
			for i := 0; i < b.N; i++ {
				next <- struct{}{}
			}
			close(next)
			b.SetBytes(int64(len(key) + len(value)))
			b.ResetTimer()
			start := time.Now()
			for w := 0; w < conc; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range next {
						sent := time.Now()
						if _, err := p.ProduceSync(context.Background(), key, value); err != nil {
							b.Error(err)
							return
						}
						us := time.Since(sent).Microseconds()
						mu.Lock()
						_ = h.RecordValue(max(us, 1))
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			reportLatency(b, h, elapsed)
		}
	}
}

func benchProducer(b *testing.B, linger time.Duration) *OutboxProducer {
	b.Helper()
	ep := itest.Endpoints(b)
	p := newOutbox(b, OutboxConfig{Brokers: ep.KafkaBrokers, Linger: linger})
	if err := p.Ready(testCtx(b)); err != nil {
		b.Fatal(err)
	}
	return p
}

func reportLatency(b *testing.B, h *hdrhistogram.Histogram, elapsed time.Duration) {
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "rec/s")
	b.ReportMetric(float64(h.ValueAtQuantile(50)), "p50-µs")
	b.ReportMetric(float64(h.ValueAtQuantile(99)), "p99-µs")
	b.ReportMetric(0, "ns/op")
}
