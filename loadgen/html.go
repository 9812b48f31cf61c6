package loadgen

import (
	"cmp"
	"fmt"
	"html"
	"math"
	"sort"
	"strconv"
	"strings"
)

// The body is as wide as the window up to 1600 px: the plots take its whole width (they scale
// with it), and beyond that their text would grow past reading size.
const pageStyle = `body{font-family:sans-serif;margin:24px;color:#222;max-width:1600px}
table{border-collapse:collapse;margin:8px 0 16px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;font-size:13px}
th{background:#f4f4f4}.pass{color:#17702a;font-weight:bold}.fail{color:#b00020;font-weight:bold}
.num{text-align:right;font-variant-numeric:tabular-nums}svg.plot{margin:6px 0 18px}
h1 small{font-size:60%;font-weight:normal;color:#444}`

// RenderHTML renders a report as one self-contained page (inline CSS and SVG, no script, no
// external resource): verdicts, rates over time, latency over time per segment, the HDR
// percentile plot, and the tables behind them.
func RenderHTML(rep *Report) []byte {
	var b strings.Builder
	rate, scaled := targetStatement(rep)
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>")
	fmt.Fprintf(&b, "<title>qim-loadgen: target %s</title><style>%s</style></head><body>", html.EscapeString(rate+scaled), pageStyle)
	fmt.Fprintf(&b, "<h1>qim-loadgen: target %s<small>%s</small></h1>", html.EscapeString(rate), html.EscapeString(scaled))
	verdict, class := "PASSED", "pass"
	if !Passed(rep.Verdicts) {
		verdict, class = "FAILED", "fail"
	}
	fmt.Fprintf(&b, `<p class="%s">%s</p>`, class, verdict)
	writeSummary(&b, rep)
	writeVerdicts(&b, rep.Verdicts)
	b.WriteString("<h2>Rates</h2>")
	ratePlot(rep).render(&b)
	fmt.Fprintf(&b, "<h2>Latency over time (per %s window, log scale)</h2>", windowLength(rep))
	for s := range numSegments {
		if rep.Room != nil && rep.Segments[s.String()].Count == 0 {
			continue // room mode has no mailbox segments: empty plots would only mislead
		}
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

// requestedRate is the rate the run was asked for. The report keeps only the frame-level side:
// when an SDK lane is wired (SDKLane.Available), Run gives it SDKLane.Clients of the connections
// and scales the frame-level target to the rest, TargetRate = requested × Connections /
// (Connections + Clients), where Config.Connections counts frame-level connections only.
func requestedRate(rep *Report) (rate float64, scaled bool) {
	frame, lane := rep.Config.Connections, rep.SDKLane.Clients
	if !rep.SDKLane.Available || lane <= 0 || frame <= 0 {
		return rep.TargetRate, false
	}
	return rep.TargetRate * float64(frame+lane) / float64(frame), true
}

// targetStatement is the target rate as both the title and the summary table state it: the
// frame-level target the arrival check judges, and, when the SDK lane took a share, what was
// requested and where the rest went. The run's label stays out of the title: the perf gate's
// states the rate requested, not this one.
func targetStatement(rep *Report) (rate, scaled string) {
	if rep.Room != nil {
		return oneDecimal(rep.TargetRate) + " events/s", fmt.Sprintf(" into rooms of %d", rep.Room.RoomSize)
	}
	req, ok := requestedRate(rep)
	if !ok {
		return oneDecimal(rep.TargetRate) + " msg/s", ""
	}
	frame, lane := rep.Config.Connections, rep.SDKLane.Clients
	return oneDecimal(rep.TargetRate) + " msg/s of frame load",
		fmt.Sprintf(" (%s requested; the other %s msg/s on the SDK lane, %d of %d connections, %d %% asked)",
			oneDecimal(req), oneDecimal(req-rep.TargetRate), lane, frame+lane, rep.Config.SDKClientsPercent)
}

// oneDecimal is a rate or a duration for people: one decimal at most (237.5, 250, 12.5).
func oneDecimal(v float64) string {
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

// windowLength is the length of the timeline's windows (the recorder's, 5 s in the CLIs).
func windowLength(rep *Report) string {
	if len(rep.Timeline) == 0 || rep.Timeline[0].DurS <= 0 {
		return "time"
	}
	return oneDecimal(rep.Timeline[0].DurS) + " s"
}

func writeSummary(b *strings.Builder, rep *Report) {
	c := rep.Config
	conns := fmt.Sprintf("%d frame-level in 1:1 pairs + %d PING control, SDK lane %d %% asked", c.Connections, c.PingConnections, c.SDKClientsPercent)
	if rep.SDKLane.Available {
		conns = fmt.Sprintf("%d frame-level in 1:1 pairs + %d on the SDK lane (%d %% asked) + %d PING control", c.Connections,
			rep.SDKLane.Clients, c.SDKClientsPercent, c.PingConnections)
	}
	if g := rep.Group; g != nil {
		conns = fmt.Sprintf("%d in %d groups of %d + %d PING control, SDK lane off (group mode)", c.Connections, g.Groups,
			g.GroupSize, c.PingConnections)
	}
	unit := "msg/s"
	if r := rep.Room; r != nil {
		unit = "events/s"
		conns = fmt.Sprintf("%d joined in %d rooms of %d, %d publishing per room (room mode)", c.Connections, r.Rooms, r.RoomSize, r.RoomSenders)
	}
	rate, scaled := targetStatement(rep)
	rows := [][2]string{
		{"started", rep.StartedAt.Format("2006-01-02 15:04:05 UTC")},
		{"label", rep.Label},
		{"gateway", c.Gateway},
		{"target rate", fmt.Sprintf("%s for %.0f s%s", rate, c.DurationS, scaled)},
		{"achieved send rate", fmt.Sprintf("%s %s (%.2f %%)", oneDecimal(rep.AchievedSendRate), unit, 100*rep.ArrivalRatio)},
		{"commit (ACK) rate", oneDecimal(rep.AckRate) + " " + unit},
		{"connections", conns},
		{"settle", fmt.Sprintf("%.1f s, complete %v", rep.Settle.WaitedS, rep.Settle.Complete)},
	}
	if g := rep.Group; g != nil {
		rows = append(rows,
			[2]string{"delivered entries", fmt.Sprintf("%.1f entries/s in the window; %d delivered, %d expected (ACKed × %d members)",
				g.EntryRate, g.DeliveredEntries, g.ExpectedEntries, g.GroupSize)},
			[2]string{"lost entries", fmt.Sprintf("%d (%d own copies)", g.LostEntries, g.LostOwnCopies)})
	}
	if g := rep.Room; g != nil {
		rows = append(rows,
			[2]string{"delivered events", fmt.Sprintf("%.0f events/s read by members in the window; %d read, %d expected (ACKed × %d members, %.4f)",
				g.DeliveredRate, g.DeliveredEvents, g.ExpectedEvents, g.RoomSize, g.DeliveredFraction)},
			[2]string{"losses", fmt.Sprintf("%d room_seq gaps, %d members dropped (ROOM_LEFT)", g.Gaps, g.SlowConsumerDrops)},
			[2]string{"CPU per delivered event", fmt.Sprintf("%.4f ms (system under test)", g.CPUMsPerEvent)})
	}
	b.WriteString(`<table>`)
	for _, r := range rows {
		if r[1] != "" {
			fmt.Fprintf(b, "<tr><th>%s</th><td>%s</td></tr>", r[0], html.EscapeString(r[1]))
		}
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
		perEntry = fmt.Sprintf(", %.4f ms per delivered %s", cpu.MsPerEntry, cmp.Or(cpu.EntryUnit, "entry"))
	}
	fmt.Fprintf(b, `<tr><th>system under test</th><td></td><td class="num">%.2f</td><td></td><td></td><td></td><td>%.3f ms per ACKed message%s</td></tr>`,
		cpu.TotalS, cpu.MsPerMessage, perEntry)
	fmt.Fprintf(b, `<tr><th>loadgen</th><td></td><td class="num">%.2f</td><td></td><td></td><td></td><td></td></tr>`, cpu.LoadgenS)
	fmt.Fprintf(b, `<tr><th>whole machine</th><td></td><td></td><td class="num">%.2f</td><td></td><td></td><td>%.0f %% idle</td></tr></table>`, cpu.MachineBusyCores, cpu.MachineIdlePct)
}
