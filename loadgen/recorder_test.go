package loadgen

import (
	"math"
	"reflect"
	"testing"
	"time"
)

// TestRecorderWindows: each window reports only its own samples and counts, the whole-run
// summary holds all of them, rates are per second of the window, out-of-range samples are
// clamped and still counted.
func TestRecorderWindows(t *testing.T) {
	start := time.Unix(1000, 0)
	r := NewRecorder(start)
	for i := 1; i <= 100; i++ {
		r.Record(SegSendAck, int64(i)*1000) // 1..100 ms
		r.CountSent()
		r.CountAcked()
	}
	w1 := r.Roll(start.Add(5*time.Second), start, Gauges{Queued: 3, Inflight: 7, Phase: "run"})
	r.Record(SegSendAck, 500_000) // 500 ms, alone in window 2
	r.Record(SegEndToEnd, -5)     // clamped to 1 µs
	r.Record(SegEndToEnd, math.MaxInt64)
	r.CountSent()
	w2 := r.Roll(start.Add(10*time.Second), start, Gauges{Phase: "drain"})

	ack1 := w1.Segments["send_ack"]
	if ack1.Count != 100 || !near(ack1.P50Ms, 50) || !near(ack1.P99Ms, 99) || !near(ack1.MaxMs, 100) {
		t.Errorf("window 1 send_ack = %+v", ack1)
	}
	if w1.SendRate != 20 || w1.AckRate != 20 || w1.Queued != 3 || w1.Inflight != 7 || w1.EndS != 5 || w1.Phase != "run" {
		t.Errorf("window 1 = %+v", w1)
	}
	if ack2 := w2.Segments["send_ack"]; ack2.Count != 1 || !near(ack2.MaxMs, 500) {
		t.Errorf("window 2 send_ack = %+v: window 1 leaked into it", ack2)
	}
	if w2.Sent != 1 || w2.Acked != 0 || w2.SendRate != 0.2 || w2.EndS != 10 {
		t.Errorf("window 2 = %+v", w2)
	}
	if e := w2.Segments["end_to_end"]; e.Count != 2 || e.MaxMs < float64(histMaxUs)/1000*0.99 {
		t.Errorf("clamped samples: %+v", e)
	}
	total := r.Summary(SegSendAck)
	if total.Count != 101 || !near(total.MaxMs, 500) || !near(total.P50Ms, 51) {
		t.Errorf("total send_ack = %+v", total)
	}
	if n := len(total.Percentiles); n < 5 || total.Percentiles[n-1].Percentile != 100 || !near(total.Percentiles[n-1].Ms, 500) {
		t.Errorf("percentile curve %+v must end at max", total.Percentiles)
	}
	for i := 1; i < len(total.Percentiles); i++ {
		if total.Percentiles[i].Ms < total.Percentiles[i-1].Ms || total.Percentiles[i].Percentile <= total.Percentiles[i-1].Percentile {
			t.Fatalf("percentile curve not monotonic at %d: %+v", i, total.Percentiles)
		}
	}
	if got := len(r.Windows()); got != 2 {
		t.Errorf("%d windows, want 2", got)
	}
	if s := r.Summary(SegPing); s.Count != 0 || s.Percentiles != nil {
		t.Errorf("empty segment summary %+v", s)
	}
}

// near: HDR values are exact to 0.1 % (3 significant digits) in totals, 1 % in windows.
func near(got, want float64) bool { return math.Abs(got-want) <= want*0.011 }

// snapshot copies every field of Counts (the one list of the run's counts): a field it missed,
// or one that is not an int64, fails here.
func TestCountsSnapshotCoversEveryField(t *testing.T) {
	var live Counts
	v := reflect.ValueOf(&live).Elem()
	for i := range v.NumField() {
		v.Field(i).SetInt(int64(i + 1))
	}
	if got := live.snapshot(); got != live {
		t.Fatalf("snapshot = %+v, want %+v", got, live)
	}
}
