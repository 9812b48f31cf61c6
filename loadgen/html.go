package loadgen

import (
	"fmt"
	"html"
	"math"
	"sort"
	"strings"
)

var segmentColors = [numSegments]string{"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b"}

const pageStyle = `body{font-family:sans-serif;margin:24px;color:#222;max-width:1000px}
table{border-collapse:collapse;margin:8px 0 16px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;font-size:13px}
th{background:#f4f4f4}.pass{color:#17702a;font-weight:bold}.fail{color:#b00020;font-weight:bold}
.num{text-align:right;font-variant-numeric:tabular-nums}svg.plot{display:block;margin:6px 0 18px}`

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

// RenderHTML renders a report as one self-contained page (inline CSS and SVG, no script, no
// external resource): verdicts, rates over time, latency over time per segment, the HDR
// percentile plot, and the tables behind them.
func RenderHTML(rep *Report) []byte {
	var b strings.Builder
	title := "qim-loadgen"
	if rep.Label != "" {
		title += ": " + rep.Label
	}
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>")
	fmt.Fprintf(&b, "<title>%s</title><style>%s</style></head><body>", html.EscapeString(title), pageStyle)
	fmt.Fprintf(&b, "<h1>%s</h1>", html.EscapeString(title))
	verdict, class := "PASSED", "pass"
	if !Passed(rep.Verdicts) {
		verdict, class = "FAILED", "fail"
	}
	fmt.Fprintf(&b, `<p class="%s">%s</p>`, class, verdict)
	writeSummary(&b, rep)
	writeVerdicts(&b, rep.Verdicts)
	b.WriteString("<h2>Rates</h2>")
	ratePlot(rep).render(&b)
	b.WriteString("<h2>Latency over time (per 5 s window, log scale)</h2>")
	for s := range numSegments {
		timePlot(rep, s).render(&b)
	}
	b.WriteString("<h2>Latency by percentile (HDR)</h2>")
	percentilePlot(rep).render(&b)
	writeSegments(&b, rep)
	writeCounts(&b, rep)
	writeCPU(&b, &rep.CPU)
	if len(rep.Errors) > 0 {
		fmt.Fprintf(&b, "<h2>Errors (%d, first %d)</h2><ul>", rep.ErrorCount, len(rep.Errors))
		for _, e := range rep.Errors {
			fmt.Fprintf(&b, "<li>%s</li>", html.EscapeString(e))
		}
		b.WriteString("</ul>")
	}
	b.WriteString("</body></html>\n")
	return []byte(b.String())
}

func writeSummary(b *strings.Builder, rep *Report) {
	c := rep.Config
	conns := fmt.Sprintf("%d in 1:1 pairs + %d PING control, SDK lane %d %%", c.Connections, c.PingConnections, c.SDKClientsPercent)
	if g := rep.Group; g != nil {
		conns = fmt.Sprintf("%d in %d groups of %d + %d PING control, SDK lane off (group mode)", c.Connections, g.Groups,
			g.GroupSize, c.PingConnections)
	}
	rows := [][2]string{
		{"started", rep.StartedAt.Format("2006-01-02 15:04:05 UTC")},
		{"gateway", c.Gateway},
		{"target rate", fmt.Sprintf("%.1f msg/s for %.0f s", rep.TargetRate, c.DurationS)},
		{"achieved send rate", fmt.Sprintf("%.1f msg/s (%.2f %%)", rep.AchievedSendRate, 100*rep.ArrivalRatio)},
		{"commit (ACK) rate", fmt.Sprintf("%.1f msg/s", rep.AckRate)},
		{"connections", conns},
		{"settle", fmt.Sprintf("%.1f s, complete %v", rep.Settle.WaitedS, rep.Settle.Complete)},
	}
	if g := rep.Group; g != nil {
		rows = append(rows,
			[2]string{"delivered entries", fmt.Sprintf("%.1f entries/s in the window; %d delivered, %d expected (ACKed × %d members)",
				g.EntryRate, g.DeliveredEntries, g.ExpectedEntries, g.GroupSize)},
			[2]string{"lost entries", fmt.Sprintf("%d (%d own copies)", g.LostEntries, g.LostOwnCopies)})
	}
	b.WriteString(`<table>`)
	for _, r := range rows {
		fmt.Fprintf(b, "<tr><th>%s</th><td>%s</td></tr>", r[0], html.EscapeString(r[1]))
	}
	b.WriteString("</table>")
}

func writeVerdicts(b *strings.Builder, vs []Verdict) {
	b.WriteString("<h2>Checks</h2><table><tr><th>check</th><th>result</th><th>evidence</th></tr>")
	for _, v := range vs {
		res, class := "pass", "pass"
		if !v.Passed {
			res, class = "FAIL", "fail"
		}
		fmt.Fprintf(b, `<tr><td>%s</td><td class="%s">%s</td><td>%s</td></tr>`, html.EscapeString(v.Name), class, res, html.EscapeString(v.Detail))
	}
	b.WriteString("</table>")
}

func writeSegments(b *strings.Builder, rep *Report) {
	b.WriteString("<h2>Segments (ms)</h2><table><tr><th>segment</th><th>count</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th><th>mean</th></tr>")
	for s := range numSegments {
		v := rep.Segments[s.String()]
		fmt.Fprintf(b, `<tr><td>%s</td><td class="num">%d</td><td class="num">%.2f</td><td class="num">%.2f</td><td class="num">%.2f</td><td class="num">%.2f</td><td class="num">%.2f</td><td class="num">%.2f</td></tr>`,
			s, v.Count, v.P50Ms, v.P90Ms, v.P99Ms, v.P999Ms, v.MaxMs, v.MeanMs)
	}
	b.WriteString("</table>")
}

func writeCounts(b *strings.Builder, rep *Report) {
	c := rep.Counts
	rows := []struct {
		k string
		v int64
	}{{"scheduled", c.Scheduled}, {"unsent", c.Unsent}, {"sent", c.Sent}, {"sent in window", c.SentInWindow},
		{"acked", c.Acked}, {"acked in window", c.AckedInWindow}, {"failed", c.Failed}, {"errors", c.Errors},
		{"unknown outcome", c.Unknown}, {"timeouts", c.Timeouts}, {"late answers", c.LateAnswers},
		{"connections lost", c.ConnectionsLost}, {"in-flight waits", c.InflightWaits}, {"delivered", c.Delivered},
		{"missing", c.Missing}, {"raw duplicates", c.RawDuplicates}, {"duplicates after dedup", c.DuplicatesAfterDedup},
		{"ack mismatch", c.AckMismatch}, {"failed but visible", c.FailedVisible}, {"pushes", c.Pushes},
		{"push events", c.PushEvents}, {"push duplicates", c.PushDuplicates}, {"pulls", c.Pulls},
		{"pull errors", c.PullErrors}, {"own copies", c.OwnCopies}, {"cursor expired", c.CursorExpired},
		{"foreign events", c.ForeignEvents}, {"pings", c.Pings}, {"ping timeouts", c.PingTimeouts}}
	if rep.Group != nil {
		rows = append(rows, struct {
			k string
			v int64
		}{"control events", c.ControlEvents})
	}
	b.WriteString("<h2>Counts</h2><table>")
	for _, r := range rows {
		fmt.Fprintf(b, `<tr><th>%s</th><td class="num">%d</td></tr>`, r.k, r.v)
	}
	codes := make([]string, 0, len(rep.FailuresByCode))
	for k := range rep.FailuresByCode {
		codes = append(codes, k)
	}
	sort.Strings(codes)
	for _, k := range codes {
		fmt.Fprintf(b, `<tr><th>error %s</th><td class="num">%d</td></tr>`, html.EscapeString(k), rep.FailuresByCode[k])
	}
	b.WriteString("</table>")
}

func writeCPU(b *strings.Builder, cpu *CPUReport) {
	fmt.Fprintf(b, "<h2>CPU over the %.0f s window</h2><table><tr><th>process</th><th>pid</th><th>CPU s</th><th>cores</th><th>syscalls/msg</th><th>ctx switches/msg</th><th>note</th></tr>", cpu.WindowS)
	for _, p := range cpu.Procs {
		fmt.Fprintf(b, `<tr><td>%s</td><td class="num">%d</td><td class="num">%.2f</td><td class="num">%.3f</td><td class="num">%.2f</td><td class="num">%.2f</td><td>%s</td></tr>`,
			html.EscapeString(p.Name), p.Pid, p.CPUS, p.Cores, p.SyscallsPerMsg, p.SwitchesPerMsg, html.EscapeString(p.Error))
	}
	perEntry := ""
	if cpu.MsPerEntry > 0 {
		perEntry = fmt.Sprintf(", %.4f ms per delivered entry", cpu.MsPerEntry)
	}
	fmt.Fprintf(b, `<tr><th>system under test</th><td></td><td class="num">%.2f</td><td></td><td></td><td></td><td>%.3f ms per ACKed message%s</td></tr>`,
		cpu.TotalS, cpu.MsPerMessage, perEntry)
	fmt.Fprintf(b, `<tr><th>loadgen</th><td></td><td class="num">%.2f</td><td></td><td></td><td></td><td></td></tr>`, cpu.LoadgenS)
	fmt.Fprintf(b, `<tr><th>whole machine</th><td></td><td></td><td class="num">%.2f</td><td></td><td></td><td>%.0f %% idle</td></tr></table>`, cpu.MachineBusyCores, cpu.MachineIdlePct)
}

func ratePlot(rep *Report) *plot {
	var send, ack, deliver, xs []float64
	hi := rep.TargetRate
	for _, w := range rep.Timeline {
		xs = append(xs, w.EndS)
		send, ack, deliver = append(send, w.SendRate), append(ack, w.AckRate), append(deliver, w.DeliverRate)
		hi = max(hi, w.SendRate, w.AckRate, w.DeliverRate)
	}
	p := &plot{title: "send, commit (ACK) and delivery rate per window", x: timeAxis(rep), y: linearAxis("msg/s", hi*1.05, "", true)}
	p.series = []series{
		{name: "target", color: "#999", dashed: true, xs: []float64{p.x.min, p.x.max}, ys: []float64{rep.TargetRate, rep.TargetRate}},
		{name: "sent", color: segmentColors[0], xs: xs, ys: send},
		{name: "acked", color: segmentColors[1], xs: xs, ys: ack},
		{name: "delivered", color: segmentColors[2], xs: xs, ys: deliver},
	}
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
		p.series = append(p.series, series{name: "SLO p99", color: "#d62728", dashed: true,
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
		p.series = append(p.series, series{name: s.String(), color: segmentColors[s], xs: xs, ys: ys})
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
