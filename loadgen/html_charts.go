package loadgen

import (
	"fmt"
	"math"
	"strings"
)

// segmentColors is one colour per segment, indexed by Segment, for the percentile plot that
// draws them all at once, so no two may be alike (TestHTMLSegmentColorsAreDistinct).
var segmentColors = [...]string{
	SegSendAck:   "#1f77b4", // blue
	SegSendPush:  "#ff7f0e", // orange
	SegEndToEnd:  "#2ca02c", // green
	SegAckPush:   "#9467bd", // purple
	SegPushPull:  "#8c564b", // brown
	SegPing:      "#e377c2", // pink
	SegGenLag:    "#17becf", // cyan
	SegBroadcast: "#d62728", // red
}

// A segment added without a colour here (or a colour without a segment) makes one of these
// array lengths negative, so the package stops compiling instead of drawing an invisible line.
var (
	_ [len(segmentColors) - int(numSegments)]struct{}
	_ [int(numSegments) - len(segmentColors)]struct{}
)

// The rate plot's strokes. Sent, acked and delivered are equal in a healthy run, so three solid
// lines print as one. They are nested instead: sent is a wide pale band, acked a thick dashed
// line and delivered a thin dotted one drawn inside it. Equal rates read at a glance as dashes
// and dots within the band; a lag (acks or deliveries falling behind during a fault) as a line
// leaving the band, still on the msg/s axis the target is read on. Plotting acked and delivered
// as differences from sent would show the lag too but lose that absolute rate; small multiples
// would spend three plots on three equal lines. The target is a hairline under the band, seen
// through it, so it does not add a fourth pattern to the stack.
var (
	targetStroke    = series{name: "target", color: "#222", width: 1}
	sentStroke      = series{name: "sent", color: "#9ecae1", width: 11, opacity: 0.75}
	ackedStroke     = series{name: "acked", color: "#d95f02", dash: "10,6", width: 3}
	deliveredStroke = series{name: "delivered", color: "#1b7837", dash: "2,3", width: 1.5}
)

// TimelineSVG renders the report's rate plot and its SEND→ACK and end-to-end latency plots with
// vertical marks (the chaos matrix marks each cell's fault and heal on them).
func TimelineSVG(rep *Report, marks ...Mark) string {
	var b strings.Builder
	for _, p := range []*plot{ratePlot(rep), timePlot(rep, SegSendAck), timePlot(rep, SegEndToEnd)} {
		p.marks = marks
		p.render(&b)
	}
	return b.String()
}

func ratePlot(rep *Report) *plot {
	var send, ack, deliver, xs []float64
	hi := rep.TargetRate
	// Room mode: each event is read by every member, so the read rate is shown per member; with
	// nothing lost the three lines coincide, as the direct-mode ones do.
	perDelivery, title, unit := 1.0, "send, commit (ACK) and delivery rate per window", "msg/s"
	if r := rep.Room; r != nil && r.RoomSize > 0 {
		perDelivery, title, unit = float64(r.RoomSize), fmt.Sprintf("published, ACKed, and read by members ÷ %d (room size), per window", r.RoomSize), "events/s"
	}
	for _, w := range rep.Timeline {
		xs = append(xs, w.EndS)
		d := w.DeliverRate / perDelivery
		send, ack, deliver = append(send, w.SendRate), append(ack, w.AckRate), append(deliver, d)
		hi = max(hi, w.SendRate, w.AckRate, d)
	}
	p := &plot{title: title, x: timeAxis(rep), y: linearAxis(unit, hi*1.05, "", true)}
	target, sent, acked, delivered := targetStroke, sentStroke, ackedStroke, deliveredStroke
	target.xs, target.ys = []float64{p.x.min, p.x.max}, []float64{rep.TargetRate, rep.TargetRate}
	sent.xs, sent.ys = xs, send
	acked.xs, acked.ys = xs, ack
	delivered.xs, delivered.ys = xs, deliver
	// Drawn in this order: the target under the translucent band, the lines on top of it.
	p.series = []series{target, sent, acked, delivered}
	return p
}

func timeAxis(rep *Report) axis {
	end := rep.Config.DurationS
	if n := len(rep.Timeline); n > 0 {
		end = max(end, rep.Timeline[n-1].EndS)
	}
	return linearAxis("seconds since start", end, "", false)
}

// timePlot is one segment's p50/p99/max per window; windows without samples leave gaps.
func timePlot(rep *Report, s Segment) *plot {
	var xs, p50, p99, mx []float64
	lo, hi := math.Inf(1), 0.0
	for _, w := range rep.Timeline {
		ws := w.Segments[s.String()]
		xs = append(xs, w.EndS)
		if ws.Count == 0 {
			p50, p99, mx = append(p50, math.NaN()), append(p99, math.NaN()), append(mx, math.NaN())
			continue
		}
		p50, p99, mx = append(p50, ws.P50Ms), append(p99, ws.P99Ms), append(mx, ws.MaxMs)
		lo, hi = min(lo, max(ws.P50Ms, 0.001)), max(hi, ws.MaxMs)
	}
	limit := sloFor(s)
	if limit > 0 {
		lo, hi = min(lo, limit), max(hi, limit)
	}
	p := &plot{title: s.String() + " latency", x: timeAxis(rep), y: logAxis("ms", lo, hi, "")}
	p.series = []series{{name: "p50", color: "#1f77b4", xs: xs, ys: p50}, {name: "p99", color: "#d62728", xs: xs, ys: p99},
		{name: "max", color: "#7f7f7f", xs: xs, ys: mx}}
	if limit > 0 {
		// A darker red than p99's, dashed: the limit reads as p99's own, yet as a line of its own.
		p.series = append(p.series, series{name: "SLO p99", color: "#8b0000", dash: "6,4", width: 1,
			xs: []float64{p.x.min, p.x.max}, ys: []float64{limit, limit}})
	}
	return p
}

// sloFor is the p99 limit drawn on a segment's plot (0: none).
func sloFor(s Segment) float64 {
	th := Thresholds{}.withDefaults()
	switch s {
	case SegSendAck:
		return msOf(th.SendAckP99)
	case SegEndToEnd:
		return msOf(th.EndToEndP99)
	}
	return 0
}

// percentilePlot puts every segment on HdrHistogram's percentile axis: x = log10(1/(1-p)), so
// 90 %, 99 %, 99.9 % ... are evenly spaced and the tail gets the room; max has its own tick at
// the right end.
func percentilePlot(rep *Report) *plot {
	xmax, lo, hi := 2.0, math.Inf(1), 0.0
	for s := range numSegments {
		for _, pt := range rep.Segments[s.String()].Percentiles {
			if pt.Percentile < 100 {
				xmax = max(xmax, math.Ceil(math.Log10(1/(1-pt.Percentile/100))))
			}
			if pt.Ms > 0 {
				lo, hi = min(lo, pt.Ms), max(hi, pt.Ms)
			}
		}
	}
	maxAt := xmax + 0.5 // the max gets its own tick, so it is never read as a percentile
	x := axis{label: "percentile", min: 0, max: maxAt}
	for d := 0.0; d <= xmax; d++ {
		x.ticks = append(x.ticks, tick{at: d, label: percentLabel(d)})
	}
	x.ticks = append(x.ticks, tick{at: maxAt, label: "max"})
	p := &plot{title: "latency by percentile", x: x, y: logAxis("ms", lo, hi, "")}
	for s := range numSegments {
		var xs, ys []float64
		for _, pt := range rep.Segments[s.String()].Percentiles {
			px := maxAt
			if pt.Percentile < 100 {
				px = math.Log10(1 / (1 - pt.Percentile/100))
			}
			xs, ys = append(xs, px), append(ys, pt.Ms)
		}
		p.series = append(p.series, series{name: s.String(), color: segmentColors[s], width: 2, xs: xs, ys: ys})
	}
	return p
}

// percentLabel names the decade d of the percentile axis: 0 → 0%, 1 → 90%, 2 → 99%, ...
func percentLabel(d float64) string {
	if d == 0 {
		return "0%"
	}
	return fmt.Sprintf("%.*f%%", max(int(d)-2, 0), 100-100/math.Pow(10, d)) // 90%, 99%, 99.9%, ...
}
