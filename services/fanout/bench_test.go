package fanout

import (
	"testing"
	"time"
)

// BenchmarkFanout measures envelopes/s through the FanoutCoordinator on the real stack: b.N
// direct-message envelopes are in a private Outbox (1 partition) before the clock starts; the
// clock runs from the end of start-up to the commit of the last batch, dispatching to a private
// 64-partition dispatch topic with the default batch size. Reported: envelopes/s, the mean
// dispatch ack wait per batch (one ProduceBatch: enqueue → last acks=all ack), the mean batch
// cycle (poll → commit) and the mean offset commit. Run with e.g. -bench Fanout -benchtime 20000x.
func BenchmarkFanout(b *testing.B) {
	const shards = 64
	outbox, dlog := createTopic(b, "outbox", 1), createTopic(b, "dispatch", shards)
	produceEnvelopes(b, outbox, b.N)
	svc := newService(b, testConfig(b, outbox, dlog, shards))
	run := startFanout(b, svc)
	for svc.Position() < 0 {
		time.Sleep(time.Millisecond)
	}
	b.ResetTimer()
	start := time.Now()
	run.waitPosition(b, int64(b.N))
	elapsed := time.Since(start)
	b.StopTimer()
	if err := run.stop(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "envelopes/s")
	b.ReportMetric(histMeanMs(b, svc, "qim_fanout_dispatch_ack_wait_seconds"), "ack-wait-ms/batch")
	b.ReportMetric(histMeanMs(b, svc, "qim_fanout_batch_cycle_seconds"), "cycle-ms/batch")
	b.ReportMetric(histMeanMs(b, svc, "qim_fanout_offset_commit_seconds"), "commit-ms/batch")
	b.ReportMetric(metricValue(b, svc, "qim_fanout_dispatches_total")/metricValue(b, svc, "qim_fanout_batches_total"), "dispatches/batch")
	b.ReportMetric(0, "ns/op")
}

// histMeanMs is the mean of a histogram in milliseconds.
func histMeanMs(b *testing.B, svc *Service, name string) float64 {
	b.Helper()
	mfs, err := svc.reg.Gatherer().Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			h := mf.GetMetric()[0].GetHistogram()
			if h.GetSampleCount() == 0 {
				return 0
			}
			return 1000 * h.GetSampleSum() / float64(h.GetSampleCount())
		}
	}
	b.Fatalf("histogram %s not found", name)
	return 0
}
