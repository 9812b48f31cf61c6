package loadgen

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Segment is one measured stretch of a message's (or a PING's) life.
type Segment int

// The segments, in report order.
const (
	SegSendAck   Segment = iota // SEND handed to the socket → SEND_ACK read (the sender)
	SegSendPush                 // SEND → first PUSH_EVENTS carrying it at the recipient
	SegEndToEnd                 // SEND → the MAILBOX_BATCH that delivered it to the recipient
	SegAckPush                  // SEND_ACK at the sender → first PUSH_EVENTS at the recipient (fanout, materialize, push)
	SegPushPull                 // first PUSH_EVENTS → the MAILBOX_BATCH that delivered it (the recipient's pull)
	SegPing                     // PING → PONG on the control group (no pipeline involved)
	SegGenLag                   // intended arrival time → SEND handed to the socket (generator)
	SegBroadcast                // room mode: SEND handed to the socket → the event read by a member
	numSegments
)

var segmentNames = [numSegments]string{"send_ack", "send_push", "end_to_end", "ack_push", "push_pull", "ping_rtt", "generator_lag", "broadcast"}

// String is the segment's report key.
func (s Segment) String() string { return segmentNames[s] }

// Histogram bounds: 1 µs .. 10 min; anything longer is clamped to the top and still counted.
const (
	histMinUs   = 1
	histMaxUs   = int64(10 * time.Minute / time.Microsecond)
	totalDigits = 3 // whole-run histograms: 0.1 % value precision
	windowDigit = 2 // per-window histograms: 1 % is plenty for a time-series point
)

// Recorder holds one whole-run and one current-window HDR histogram per segment and the
// per-window send/ACK counters. Samples may come from any goroutine; Roll closes the window.
//
// Invariants: every sample lands in both histograms of its segment under that segment's lock,
// so a window never sees a sample the total lacks; Roll swaps the counters atomically, so a
// send counted in no window or in two cannot happen.
//
// Rejected alternative: attributing samples to windows by their own timestamp (one histogram
// per window kept for the whole run). Exact to the microsecond at window edges, but it keeps
// 36 × 5 histograms alive for a 180 s run and a late sample would rewrite a window already
// printed in the progress line.
type Recorder struct {
	segs          [numSegments]segRec
	sent, acked   atomic.Int64 // current window
	delivered     atomic.Int64 // current window (first pulls)
	mu            sync.Mutex
	windows       []Window
	windowStarted time.Time
}

type segRec struct {
	mu    sync.Mutex
	total *hdrhistogram.Histogram
	win   *hdrhistogram.Histogram
}

// NewRecorder starts the first window at start.
func NewRecorder(start time.Time) *Recorder {
	r := &Recorder{windowStarted: start}
	for i := range r.segs {
		r.segs[i].total = hdrhistogram.New(histMinUs, histMaxUs, totalDigits)
		r.segs[i].win = hdrhistogram.New(histMinUs, histMaxUs, windowDigit)
	}
	return r
}

// Record adds one sample of seg in microseconds (clamped into the histogram's range).
func (r *Recorder) Record(seg Segment, us int64) {
	us = min(max(us, histMinUs), histMaxUs)
	s := &r.segs[seg]
	s.mu.Lock()
	_ = s.total.RecordValue(us) // in range by construction
	_ = s.win.RecordValue(us)
	s.mu.Unlock()
}

// CountSent, CountAcked and CountDelivered feed the rate columns of the current window.
func (r *Recorder) CountSent()      { r.sent.Add(1) }
func (r *Recorder) CountAcked()     { r.acked.Add(1) }
func (r *Recorder) CountDelivered() { r.delivered.Add(1) }

// Roll closes the current window at now, appends it to the time series and returns it; g holds
// the gauges the caller sampled at the same moment.
func (r *Recorder) Roll(now time.Time, runStart time.Time, g Gauges) Window {
	r.mu.Lock()
	defer r.mu.Unlock()
	dur := now.Sub(r.windowStarted).Seconds()
	w := Window{
		EndS:      now.Sub(runStart).Seconds(),
		DurS:      dur,
		Phase:     g.Phase,
		Queued:    g.Queued,
		Inflight:  g.Inflight,
		Segments:  make(map[string]WindowSegment, numSegments),
		Sent:      r.sent.Swap(0),
		Acked:     r.acked.Swap(0),
		Delivered: r.delivered.Swap(0),
	}
	if dur > 0 {
		w.SendRate = float64(w.Sent) / dur
		w.AckRate = float64(w.Acked) / dur
		w.DeliverRate = float64(w.Delivered) / dur
	}
	for i := range r.segs {
		s := &r.segs[i]
		s.mu.Lock()
		w.Segments[Segment(i).String()] = windowSegment(s.win)
		s.win.Reset()
		s.mu.Unlock()
	}
	r.windowStarted = now
	r.windows = append(r.windows, w)
	return w
}

// Open is how long the current window has been open at now.
func (r *Recorder) Open(now time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return now.Sub(r.windowStarted)
}

// Windows is the time series so far.
func (r *Recorder) Windows() []Window {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Window(nil), r.windows...)
}

// Summary is the whole-run summary of seg.
func (r *Recorder) Summary(seg Segment) SegmentSummary {
	s := &r.segs[seg]
	s.mu.Lock()
	defer s.mu.Unlock()
	return summarize(s.total)
}

func windowSegment(h *hdrhistogram.Histogram) WindowSegment {
	if h.TotalCount() == 0 {
		return WindowSegment{}
	}
	return WindowSegment{Count: h.TotalCount(), P50Ms: ms(h.ValueAtQuantile(50)),
		P99Ms: ms(h.ValueAtQuantile(99)), MaxMs: ms(h.Max())}
}

func ms(us int64) float64 { return float64(us) / 1000 }

// percentilePoints are where the HDR percentile plot samples the distribution: denser towards
// the tail, like HdrHistogram's own percentile output (each step halves the distance to 100 %).
var percentilePoints = func() []float64 {
	var ps []float64
	rest := 100.0
	for range 60 {
		ps = append(ps, 100-rest)
		rest /= 1.4142135623730951 // two points per halving
		if 100-rest > 99.9999 {
			break
		}
	}
	return ps
}()

func summarize(h *hdrhistogram.Histogram) SegmentSummary {
	n := h.TotalCount()
	if n == 0 {
		return SegmentSummary{}
	}
	s := SegmentSummary{Count: n, MinMs: ms(h.Min()), MeanMs: h.Mean() / 1000,
		P50Ms: ms(h.ValueAtQuantile(50)), P90Ms: ms(h.ValueAtQuantile(90)), P99Ms: ms(h.ValueAtQuantile(99)),
		P999Ms: ms(h.ValueAtQuantile(99.9)), MaxMs: ms(h.Max())}
	for _, p := range percentilePoints {
		if 1/(1-p/100) > float64(n) { // beyond what n samples can resolve
			break
		}
		s.Percentiles = append(s.Percentiles, PercentilePoint{Percentile: p, Ms: ms(h.ValueAtQuantile(p))})
	}
	s.Percentiles = append(s.Percentiles, PercentilePoint{Percentile: 100, Ms: s.MaxMs})
	return s
}
