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
.pass{color:#186a3b;font-weight:bold}.fail{color:#b03a2e;font-weight:bold}.skip{color:#7d6608;font-weight:bold}.zero{color:#999}.bad{background:#f5b7b1}
h2{margin-top:2em}svg{border:1px solid #eee}th.v{writing-mode:vertical-rl;transform:rotate(180deg);text-align:left;white-space:nowrap;padding:6px 3px}</style></head><body>`)
	fmt.Fprintf(&b, "<h1>Q-IM chaos matrix: <span class=%q>%s</span></h1>", cls(rep.Passed), passWord(rep.Passed))
	fmt.Fprintf(&b, "<p>%s, %.0f s, %d cells; load %.0f msg/s on %d connections (%d%% SDK lane), fault at %.0f s, STALLED after %.0f s without progress.</p>",
		rep.StartedAt.Format("2006-01-02 15:04:05 UTC"), rep.DurationS, len(rep.Cells), rep.Options.Rate, rep.Options.Connections,
		rep.Options.SDKPercent, rep.Options.FaultAtS, rep.Options.StallAfterS)
	writeStabilityHTML(&b, rep)
	writeMatrix(&b, rep)
	for _, c := range rep.Cells {
		writeCell(&b, c, rep.Options.Rate, c.stem(rep.Options.Repeat > 1))
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

// cellWord and cellCls show a skipped cell as SKIPPED, never as passed or failed.
func cellWord(c *CellResult) string {
	if c.Skipped != "" {
		return "SKIPPED"
	}
	return passWord(c.Passed)
}

func cellCls(c *CellResult) string {
	if c.Skipped != "" {
		return "skip"
	}
	return cls(c.Passed)
}

func writeMatrix(b *strings.Builder, rep *Report) {
	vs := rep.Verdicts()
	b.WriteString(`<table><tr><th class="l">cell</th><th class="l">fault</th><th>verdict</th><th>acked</th><th>unknown</th>`)
	// Verdict names run up their column (th.v): written across, a dozen of them widen the
	// table past a 1,400 px window.
	for _, v := range vs {
		fmt.Fprintf(b, `<th class="v">%s</th>`, html.EscapeString(string(v)))
	}
	b.WriteString("<th>recovery ms</th><th>drain ms</th><th>s</th></tr>\n")
	for _, c := range rep.Cells {
		stem := c.stem(rep.Options.Repeat > 1)
		fmt.Fprintf(b, `<tr><td class="l"><a href="#%s">%s</a></td><td class="l">%s</td><td class=%q>%s</td><td>%s</td><td>%s</td>`,
			stem, stem, html.EscapeString(c.Class), cellCls(c), cellWord(c), count(c, c.Load.Acked+c.Load.SDKAcked), count(c, c.Load.Unknown))
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

func writeCell(b *strings.Builder, c *CellResult, rate float64, stem string) {
	fmt.Fprintf(b, "<h2 id=%q>%s — <span class=%q>%s</span></h2><p>%s</p>", stem, stem, cellCls(c), cellWord(c), html.EscapeString(c.Title))
	if c.Skipped != "" {
		fmt.Fprintf(b, "<p>Skipped: %s</p>", html.EscapeString(c.Skipped))
		return
	}
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
		b.WriteString(timeline(c, rate))
	}
	if c.Logs != "" {
		fmt.Fprintf(b, "<p>Service logs: <code>%s/</code></p>", c.Logs)
	}
	if c.History != "" {
		fmt.Fprintf(b, "<p>History: <code>%s</code> (%d events; <code>zstdcat</code> shows it).</p>", c.History, c.Events)
	}
}

// timeline is the cell's load timeline drawn by the load generator's own plots (rates, and
// SEND→ACK and end-to-end latency on a log scale) with the fault and the heal marked.
func timeline(c *CellResult, rate float64) string {
	rep := &loadgen.Report{TargetRate: rate, Timeline: c.Timeline, Config: loadgen.ReportConfig{DurationS: c.WindowS}}
	return loadgen.TimelineSVG(rep, loadgen.Mark{AtS: c.FaultS, Label: markLabel(c), Color: "#c0392b"},
		loadgen.Mark{AtS: c.HealS, Label: "heal", Color: "#27ae60"})
}

// markLabel names the fault mark by the cell's fault class (results older than the class say
// "fault").
func markLabel(c *CellResult) string {
	if c.Class == "" {
		return "fault"
	}
	return c.Class
}

// count shows a load count, or a dash for a cell that ran no load (a go test cell).
func count(c *CellResult, n int64) string {
	if c.Checker == nil && n == 0 {
		return "–"
	}
	return fmt.Sprint(n)
}
