package gates

import (
	"encoding/json"
	"fmt"
	"html"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/qim-dev/qim/loadgen"
)

// soakReport is soak-footprint.json: the samples and each load's report.
type soakReport struct {
	Samples []soakSample      `json:"samples"`
	Loads   []*loadgen.Report `json:"loads"`
	Checks  []Check           `json:"checks"`
}

// writeSoakReport writes soak-footprint.json and soak-footprint.html (the footprint plotted over
// time, then each load's timeline) into the report directory; soak.json is the runner's result.
func writeSoakReport(env *Env, r *Result, samples []soakSample, reps []*loadgen.Report) {
	jsonPath, htmlPath := filepath.Join(env.ReportDir, "soak-footprint.json"), filepath.Join(env.ReportDir, "soak-footprint.html")
	b, err := json.MarshalIndent(soakReport{Samples: samples, Loads: reps, Checks: r.Checks}, "", "  ")
	if err == nil {
		err = os.WriteFile(jsonPath, append(b, '\n'), 0o644)
	}
	if err == nil {
		err = os.WriteFile(htmlPath, []byte(soakHTML(r, samples, reps)), 0o644)
	}
	if err != nil {
		r.Fail(fmt.Errorf("gates: soak report: %w", err))
		return
	}
	r.Artifacts = append(r.Artifacts, "soak-footprint.json", "soak-footprint.html")
	env.Progressf("report: %s", htmlPath)
}

func soakHTML(r *Result, samples []soakSample, reps []*loadgen.Report) string {
	var b strings.Builder
	b.WriteString(`<!doctype html><html><head><meta charset="utf-8"><title>Q-IM soak</title><style>` +
		`body{font-family:sans-serif;max-width:1250px;margin:2em auto}td,th{padding:2px 8px;text-align:left}` +
		`.pass{color:#1a7f37}.fail{color:#c0392b}svg{border:1px solid #eee;margin-top:1em}</style></head><body>`)
	fmt.Fprintf(&b, "<h1>Q-IM soak</h1><p>%d samples over %.0f s.</p><table><tr><th>check</th><th>result</th><th>detail</th></tr>",
		len(samples), lastAt(samples))
	for _, c := range r.Checks {
		word, cls := "PASSED", "pass"
		if c.Skipped {
			word, cls = "SKIPPED", ""
		} else if !c.Passed {
			word, cls = "FAILED", "fail"
		}
		fmt.Fprintf(&b, "<tr><td>%s</td><td class=%q>%s</td><td>%s</td></tr>", html.EscapeString(c.Name), cls, word, html.EscapeString(c.Detail))
	}
	b.WriteString("</table><h2>Footprint</h2>")
	xs := make([]float64, len(samples))
	for i, s := range samples {
		xs[i] = s.AtS
	}
	for _, p := range []struct {
		title, unit string
		value       func(soakProcSample) float64
	}{{"resident memory per process", "MiB", func(p soakProcSample) float64 { return p.RSSBytes / (1 << 20) }},
		{"goroutines per process", "", func(p soakProcSample) float64 { return p.Goroutines }},
		{"open file descriptors per process", "", func(p soakProcSample) float64 { return p.OpenFDs }}} {
		b.WriteString(loadgen.LinesSVG(p.title, "seconds since start", p.unit, xs, procLines(samples, p.value)))
	}
	stores := []loadgen.Line{{Name: "redis-core"}, {Name: "redis-mailbox"}, {Name: "broker (disk)"}, {Name: "CQL (disk)"}}
	for _, s := range samples {
		for i, v := range []float64{s.RedisCoreBytes, s.RedisMailboxBytes, s.KafkaBytes, s.CQLBytes} {
			stores[i].Ys = append(stores[i].Ys, v/(1<<20))
		}
	}
	b.WriteString(loadgen.LinesSVG("stores", "seconds since start", "MiB", xs, stores))
	for _, rep := range reps {
		if rep != nil {
			fmt.Fprintf(&b, "<h2>%s</h2>%s", html.EscapeString(rep.Label), loadgen.TimelineSVG(rep))
		}
	}
	b.WriteString("</body></html>\n")
	return b.String()
}

// procLines is one line per process of value over the samples (a failed scrape is a gap).
func procLines(samples []soakSample, value func(soakProcSample) float64) []loadgen.Line {
	if len(samples) == 0 {
		return nil
	}
	var lines []loadgen.Line
	for _, name := range slices.Sorted(maps.Keys(samples[0].Procs)) {
		l := loadgen.Line{Name: name}
		for _, s := range samples {
			v := value(s.Procs[name])
			if v < 0 {
				v = math.NaN()
			}
			l.Ys = append(l.Ys, v)
		}
		lines = append(lines, l)
	}
	return lines
}

func lastAt(samples []soakSample) float64 {
	if len(samples) == 0 {
		return 0
	}
	return samples[len(samples)-1].AtS
}
