package chaos

import (
	"fmt"
	"html"
	"os"
	"strings"

	"github.com/qim-dev/qim/loadgen"
)

// writeHTML renders the matrix as one self-contained page: the cell × verdict table, then per
// cell its judgements and a rate timeline with the fault and the heal marked.
func writeHTML(path string, rep *Report) error {
	var b strings.Builder
	b.WriteString(`<!doctype html><html><head><meta charset="utf-8"><title>Q-IM chaos matrix</title><style>
body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse;margin:1em 0}
td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:right}td.l,th.l{text-align:left}
.pass{color:#186a3b;font-weight:bold}.fail{color:#b03a2e;font-weight:bold}.zero{color:#999}.bad{background:#f5b7b1}
h2{margin-top:2em}svg{border:1px solid #eee}</style></head><body>`)
	fmt.Fprintf(&b, "<h1>Q-IM chaos matrix: <span class=%q>%s</span></h1>", cls(rep.Passed), passWord(rep.Passed))
	fmt.Fprintf(&b, "<p>%s, %.0f s, %d cells; load %.0f msg/s on %d connections (%d%% SDK lane), fault at %.0f s, STALLED after %.0f s without progress.</p>",
		rep.StartedAt.Format("2006-01-02 15:04:05 UTC"), rep.DurationS, len(rep.Cells), rep.Options.Rate, rep.Options.Connections,
		rep.Options.SDKPercent, rep.Options.FaultAtS, rep.Options.StallAfterS)
	writeMatrix(&b, rep)
	for _, c := range rep.Cells {
		writeCell(&b, c)
	}
	b.WriteString("</body></html>\n")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	return nil
}

func cls(ok bool) string {
	if ok {
		return "pass"
	}
	return "fail"
}

func writeMatrix(b *strings.Builder, rep *Report) {
	vs := rep.Verdicts()
	b.WriteString(`<table><tr><th class="l">cell</th><th>verdict</th><th>acked</th><th>unknown</th>`)
	for _, v := range vs {
		fmt.Fprintf(b, "<th>%s</th>", html.EscapeString(string(v)))
	}
	b.WriteString("<th>recovery ms</th><th>drain ms</th><th>s</th></tr>\n")
	for _, c := range rep.Cells {
		fmt.Fprintf(b, `<tr><td class="l"><a href="#%s">%s</a></td><td class=%q>%s</td><td>%s</td><td>%s</td>`,
			c.Name, c.Name, cls(c.Passed), passWord(c.Passed), count(c, c.Load.Acked+c.Load.SDKAcked), count(c, c.Load.Unknown))
		for _, v := range vs {
			n := 0
			if c.Checker != nil {
				n = c.Checker.Counts[v]
			}
			klass := "zero"
			if n > 0 {
				klass = "bad"
				if !v.Failure() {
					klass = ""
				}
			}
			fmt.Fprintf(b, "<td class=%q>%d</td>", klass, n)
		}
		fmt.Fprintf(b, "<td>%s</td><td>%s</td><td>%.0f</td></tr>\n", ms(c.RecoveryAckMs), ms(c.DrainMs), c.DurationS)
	}
	b.WriteString("</table>\n")
}

func ms(v float64) string {
	if v < 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f", v)
}

func writeCell(b *strings.Builder, c *CellResult) {
	fmt.Fprintf(b, "<h2 id=%q>%s — <span class=%q>%s</span></h2><p>%s</p>", c.Name, c.Name, cls(c.Passed), passWord(c.Passed), html.EscapeString(c.Title))
	b.WriteString(`<table><tr><th class="l">check</th><th class="l">result</th><th class="l">detail</th></tr>`)
	for _, ch := range c.Checks {
		fmt.Fprintf(b, `<tr><td class="l">%s</td><td class="l %s">%s</td><td class="l">%s</td></tr>`,
			html.EscapeString(ch.Name), cls(ch.Passed), passWord(ch.Passed), html.EscapeString(ch.Detail))
	}
	b.WriteString("</table>")
	for _, line := range c.Restarts {
		fmt.Fprintf(b, "<p>Supervisor: %s</p>", html.EscapeString(line))
	}
	if len(c.Timeline) > 0 {
		b.WriteString(timelineSVG(c.Timeline, c.FaultS, c.HealS))
	}
	if c.Logs != "" {
		fmt.Fprintf(b, "<p>Service logs: <code>%s/</code></p>", c.Logs)
	}
	if c.History != "" {
		fmt.Fprintf(b, "<p>History: <code>%s</code> (%d events; <code>zstdcat</code> shows it).</p>", c.History, c.Events)
	}
}

// series is one line of a timeline panel.
type series struct {
	color, name string
	v           func(loadgen.Window) float64
}

// timelineSVG draws two panels over the cell's 1 s windows, with the fault (red) and the heal
// (green) as vertical lines: the rates (sent, acked, delivered) and the per-window p99 latencies
// (SEND→ACK, end to end). The shape of a recovery is what a reader wants at a glance.
func timelineSVG(ws []loadgen.Window, faultS, healS float64) string {
	ack, e2e := loadgen.SegSendAck.String(), loadgen.SegEndToEnd.String()
	return panelSVG(ws, faultS, healS, "msg/s", []series{
		{"#2980b9", "sent", func(x loadgen.Window) float64 { return x.SendRate }},
		{"#8e44ad", "acked", func(x loadgen.Window) float64 { return x.AckRate }},
		{"#16a085", "delivered", func(x loadgen.Window) float64 { return x.DeliverRate }},
	}) + "<br>" + panelSVG(ws, faultS, healS, "ms p99", []series{
		{"#d35400", "send→ACK p99", func(x loadgen.Window) float64 { return x.Segments[ack].P99Ms }},
		{"#7f8c8d", "end-to-end p99", func(x loadgen.Window) float64 { return x.Segments[e2e].P99Ms }},
	})
}

func panelSVG(ws []loadgen.Window, faultS, healS float64, unit string, ss []series) string {
	const w, h, left, bottom = 900.0, 180.0, 50.0, 25.0
	maxT, maxV := 1.0, 1.0
	for _, x := range ws {
		maxT = max(maxT, x.EndS)
		for _, s := range ss {
			maxV = max(maxV, s.v(x))
		}
	}
	maxV *= 1.1
	px := func(t float64) float64 { return left + t/maxT*(w-left-10) }
	py := func(v float64) float64 { return h - bottom - v/maxV*(h-bottom-10) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg width="%.0f" height="%.0f" xmlns="http://www.w3.org/2000/svg" font-size="11">`, w, h)
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#999"/>`, left, h-bottom, w-10, h-bottom)
	fmt.Fprintf(&b, `<text x="5" y="15">%.0f %s</text><text x="%.0f" y="%.0f">%.0f s</text>`, maxV, unit, w-60, h-5, maxT)
	for _, m := range []struct {
		at           float64
		color, label string
	}{{faultS, "#c0392b", "fault"}, {healS, "#27ae60", "heal"}} {
		if m.at > 0 {
			fmt.Fprintf(&b, `<line x1="%.1f" y1="10" x2="%.1f" y2="%.0f" stroke="%s" stroke-dasharray="4"/><text x="%.1f" y="20" fill="%s">%s</text>`,
				px(m.at), px(m.at), h-bottom, m.color, px(m.at)+3, m.color, m.label)
		}
	}
	for i, s := range ss {
		pts := make([]string, 0, len(ws))
		for _, x := range ws {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(x.EndS), py(s.v(x))))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`, s.color, strings.Join(pts, " "))
		fmt.Fprintf(&b, `<text x="%.0f" y="15" fill="%s">%s</text>`, w-320+float64(i)*105, s.color, s.name)
	}
	b.WriteString("</svg>")
	return b.String()
}

// count shows a load count, or a dash for a cell that ran no load (a go test cell).
func count(c *CellResult, n int64) string {
	if c.Checker == nil && n == 0 {
		return "–"
	}
	return fmt.Sprint(n)
}
