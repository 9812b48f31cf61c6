package ab

import (
	"encoding/json"
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/qim-dev/qim/gates"
)

// ABReport is ab.json: every run of both sides in the order they ran.
type ABReport struct {
	StartedAt time.Time      `json:"started_at"`
	DurationS float64        `json:"duration_s"`
	Baseline  abSide         `json:"baseline"`
	Candidate abSide         `json:"candidate"`
	Perf      map[string]any `json:"perf_options"`
	Runs      []ABRun        `json:"runs"`
}

// ABRun is one perf gate run of one side.
type ABRun struct {
	Round   int                `json:"round"`
	Side    string             `json:"side"`
	Commit  string             `json:"commit"`
	Dir     string             `json:"report_dir"`
	Passed  bool               `json:"passed"`
	Error   string             `json:"error,omitempty"`
	Failed  []string           `json:"failed_checks,omitempty"`
	Metrics map[string]float64 `json:"metrics"`
}

func abPerfOptions(p gates.PerfOptions) map[string]any {
	return map[string]any{"rate": p.Rate, "duration_s": p.Duration.Seconds(), "find_max": p.FindMax,
		"connections": p.Connections, "sdk_clients_percent": p.SDKClients, "mode": string(p.Mode), "group_size": p.GroupSize}
}

func (r ABRun) line() string {
	m := r.Metrics
	verdict := "PASS"
	if !r.Passed {
		verdict = "FAIL (" + strings.Join(r.Failed, "; ") + r.Error + ")"
	}
	if v, ok := m["max_passing_rate"]; ok { // a find-max run has no single measured window
		return fmt.Sprintf("%s: find-max %.0f msg/s (capacity CPU %.3f ms/msg, %.2f broker requests/msg)", verdict, v,
			m["capacity_cpu_ms_per_msg"], m["capacity_kafka_requests_per_msg"])
	}
	return fmt.Sprintf("%s: ACK p99 %.1f ms, e2e p99 %.1f ms, %.3f CPU ms/msg, %.2f broker requests/msg", verdict,
		m["send_ack_p99_ms"], m["end_to_end_p99_ms"], m["cpu_ms_per_msg"], m["kafka_requests_per_msg"])
}

// abHeadline are the rows every comparison shows first, in this order; the per-process CPU and
// the Redis calls follow (whatever keys the runs reported).
var abHeadline = []string{"max_passing_rate", "capacity_cpu_ms_per_msg", "achieved_send_rate", "send_ack_p50_ms",
	"send_ack_p99_ms", "end_to_end_p50_ms", "end_to_end_p99_ms", "cpu_ms_per_msg", "machine_busy_cores", "kafka_requests_per_msg",
	"capacity_kafka_requests_per_msg"}

// rows lists the metric keys of the table.
func (rep *ABReport) rows() []string {
	seen := map[string]bool{}
	for _, r := range rep.Runs {
		for k := range r.Metrics {
			seen[k] = true
		}
	}
	var out, rest []string
	for _, k := range abHeadline {
		if seen[k] {
			out = append(out, k)
		}
	}
	for k := range seen {
		if abDetail(k) {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// abDetail says whether the table shows key after the headline rows: CPU by process, Redis
// commands and script calls by server, broker requests by API, of the measured run and of the
// find-max capacity step.
func abDetail(k string) bool {
	k = strings.TrimPrefix(k, "capacity_")
	for _, p := range []string{"cpu_ms_per_msg_", "redis_cmds_per_msg_", "redis_script_calls_per_msg_", "kafka_requests_per_msg_api_"} {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// values are one side's values of key, in run order (NaN where a run did not report it).
func (rep *ABReport) values(side, key string) []float64 {
	var out []float64
	for _, r := range rep.Runs {
		if r.Side != side {
			continue
		}
		v, ok := r.Metrics[key]
		if !ok {
			v = math.NaN()
		}
		out = append(out, v)
	}
	return out
}

func median(vs []float64) float64 {
	var xs []float64
	for _, v := range vs {
		if !math.IsNaN(v) {
			xs = append(xs, v)
		}
	}
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}

func num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "—"
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}

// Markdown is the comparison table: each run's value, each side's median, candidate ÷ baseline.
func (rep *ABReport) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "| metric | baseline %s (runs) | candidate %s (runs) | median baseline | median candidate | candidate ÷ baseline |\n",
		rep.Baseline.label(), rep.Candidate.label())
	b.WriteString("|---|---|---|---|---|---|\n")
	pass := func(side string) string {
		var ws []string
		for _, r := range rep.Runs {
			if r.Side == side {
				ws = append(ws, map[bool]string{true: "PASS", false: "FAIL"}[r.Passed])
			}
		}
		return strings.Join(ws, " ")
	}
	fmt.Fprintf(&b, "| SLO verdict | %s | %s | | | |\n", pass("baseline"), pass("candidate"))
	for _, k := range rep.rows() {
		bv, cv := rep.values("baseline", k), rep.values("candidate", k)
		mb, mc := median(bv), median(cv)
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", k, joinNums(bv), joinNums(cv), num(mb), num(mc), num(mc/mb))
	}
	return b.String()
}

func joinNums(vs []float64) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = num(v)
	}
	return strings.Join(out, " · ")
}

// write saves ab.json and ab.html (the table, and one bar chart per headline latency and CPU
// row: a bar per run in run order, baseline and candidate in two colours).
func (rep *ABReport) write(dir string) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("gates: encode ab.json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ab.json"), b, 0o644); err != nil {
		return fmt.Errorf("gates: %w", err)
	}
	var h strings.Builder
	fmt.Fprintf(&h, "<!doctype html><meta charset=utf-8><title>Q-IM A/B</title><style>body{font-family:sans-serif}td,th{padding:2px 8px;border-bottom:1px solid #ddd}</style>")
	fmt.Fprintf(&h, "<h1>A/B: baseline %s vs candidate %s</h1><p>%d runs, alternating, %.0f s; perf options %s</p>",
		html.EscapeString(rep.Baseline.Ref), html.EscapeString(rep.Candidate.Ref), len(rep.Runs), rep.DurationS, html.EscapeString(fmt.Sprint(rep.Perf)))
	for _, k := range []string{"max_passing_rate", "end_to_end_p99_ms", "send_ack_p99_ms", "cpu_ms_per_msg", "capacity_cpu_ms_per_msg"} {
		h.WriteString(rep.bars(k))
	}
	h.WriteString("<table><tr><th>metric</th><th>baseline runs</th><th>candidate runs</th><th>median b</th><th>median c</th><th>c ÷ b</th></tr>")
	for _, k := range rep.rows() {
		bv, cv := rep.values("baseline", k), rep.values("candidate", k)
		fmt.Fprintf(&h, "<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>", k, joinNums(bv), joinNums(cv),
			num(median(bv)), num(median(cv)), num(median(cv)/median(bv)))
	}
	h.WriteString("</table>")
	return os.WriteFile(filepath.Join(dir, "ab.html"), []byte(h.String()), 0o644)
}

// bars is an SVG bar chart of key over the runs ("" when no run reported it).
func (rep *ABReport) bars(key string) string {
	top := 0.0
	for _, r := range rep.Runs {
		top = math.Max(top, r.Metrics[key])
	}
	if top <= 0 {
		return ""
	}
	const w, hgt, bw = 40, 120, 28
	var b strings.Builder
	fmt.Fprintf(&b, "<h3>%s</h3><svg width=%d height=%d>", key, len(rep.Runs)*w+10, hgt+30)
	for i, r := range rep.Runs {
		v := r.Metrics[key]
		bh := v / top * hgt
		colour := map[string]string{"baseline": "#999", "candidate": "#2874a6"}[r.Side]
		fmt.Fprintf(&b, `<rect x=%d y=%.1f width=%d height=%.1f fill=%q><title>round %d %s: %s</title></rect>`,
			i*w+5, hgt-bh, bw, bh, colour, r.Round, r.Side, num(v))
		fmt.Fprintf(&b, `<text x=%d y=%d font-size=10>%s</text>`, i*w+5, hgt+14, num(v))
		fmt.Fprintf(&b, `<text x=%d y=%d font-size=10>%s%d</text>`, i*w+5, hgt+26, r.Side[:1], r.Round)
	}
	b.WriteString("</svg>")
	return b.String()
}
