package perf

import (
	"math"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

func histFamily(count uint64, buckets map[float64]uint64) *dto.MetricFamily {
	h := &dto.Histogram{SampleCount: proto.Uint64(count)}
	for _, ub := range []float64{0.001, 0.005, 0.01, math.Inf(1)} {
		h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: proto.Float64(ub), CumulativeCount: proto.Uint64(buckets[ub])})
	}
	return &dto.MetricFamily{Metric: []*dto.Metric{{Histogram: h}}}
}

// Two gateways' buckets add up, and quantiles interpolate inside the bucket holding the rank.
func TestBucketSumQuantile(t *testing.T) {
	var b bucketSum
	b.add(histFamily(10, map[float64]uint64{0.001: 4, 0.005: 8, 0.01: 10, math.Inf(1): 10}))
	b.add(histFamily(10, map[float64]uint64{0.001: 4, 0.005: 8, 0.01: 10, math.Inf(1): 10}))
	for _, c := range []struct{ q, want float64 }{
		{0.2, 0.0005},   // rank 4 of 8 in [0, 1 ms]
		{0.6, 0.003},    // rank 12: 4 of 8 past 1 ms in (1, 5 ms]
		{0.95, 0.00875}, // rank 19: 3 of 4 in (5, 10 ms]
	} {
		if got := b.quantile(c.q); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	var over bucketSum
	over.add(histFamily(2, map[float64]uint64{0.01: 1, math.Inf(1): 2}))
	if got := over.quantile(0.99); got != 0.01 {
		t.Errorf("a rank in the +Inf bucket = %v, want the last finite bound", got)
	}
	if (&bucketSum{}).quantile(0.5) != 0 {
		t.Error("an empty histogram has no quantile")
	}
}
