package commitlog

import (
	"context"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
)

// BenchmarkDispatchBatch measures the fanout batch cycle's ack wait: one ProduceBatch of
// contract.FanoutBatchDefault records of 512 bytes spread over every dispatch partition, as a
// batch of direct messages to users on all shards produces. The predecessor implementation
// measured 27 ms per batch with librdkafka, one produce request per partition; results of this
// benchmark and that comparison: docs/adr/0017-dispatch-producer-batch-and-idempotence.md.
func BenchmarkDispatchBatch(b *testing.B) {
	for _, idem := range []struct {
		name    string
		disable bool
	}{{"idempotent", false}, {"non-idempotent", true}, {"idempotent#2", false}, {"non-idempotent#2", true}} {
		b.Run(idem.name, func(b *testing.B) {
			ep := itest.Endpoints(b)
			d := newDispatch(b, DispatchConfig{Brokers: ep.KafkaBrokers, DisableIdempotence: idem.disable})
			if err := d.Ready(testCtx(b), ep.DispatchShards); err != nil {
				b.Fatal(err)
			}
			run := runID(b)
			recs := make([]Record, contract.FanoutBatchDefault)
			value := make([]byte, 512)
			for i := range recs {
				recs[i] = Record{Partition: int32(i % ep.DispatchShards), Key: messageKey(b, run, i), Value: value}
			}
			h := hdrhistogram.New(1, int64(10*time.Second/time.Microsecond), 3)
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				if err := d.ProduceBatch(context.Background(), recs); err != nil {
					b.Fatal(err)
				}
				_ = h.RecordValue(max(time.Since(t0).Microseconds(), 1))
			}
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N*len(recs))/elapsed.Seconds(), "rec/s")
			b.ReportMetric(float64(h.ValueAtQuantile(50)), "batch-p50-µs")
			b.ReportMetric(float64(h.ValueAtQuantile(99)), "batch-p99-µs")
			b.ReportMetric(0, "ns/op")
		})
	}
}
