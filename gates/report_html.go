package gates

import (
	"fmt"
	"html/template"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// report.html is the page a release manager reads first: the verdict, what was measured (command,
// commit, machine), each gate's result with a link to its own report (perf, chaos), and every
// gate's metrics and checks. Numbers are rounded for reading; the JSON beside it keeps them exact.
var reportTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"metricKeys": func(m map[string]float64) []string {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return keys
	},
	"num":   formatNumber,
	"utc":   func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"pages": func(r *Result) []string { return htmlArtifacts(r) },
}).Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>qim-gate report</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;max-width:70em}
.pass{color:#17692f}.fail{color:#b3261e}.skip{color:#8a6d00}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:.25em .6em;vertical-align:top;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}
pre{margin:0;white-space:pre-wrap;max-height:20em;overflow:auto;font-size:12px}
h2{margin-top:1.5em}dl{display:grid;grid-template-columns:max-content auto;gap:.1em 1em}dt{font-weight:600}dd{margin:0}
</style></head><body>
<h1>qim-gate run: {{if .Passed}}<span class="pass">PASSED</span>{{else}}<span class="fail">FAILED</span>{{end}}{{if .Skipped}} <span class="skip">with {{len .Skipped}} gate(s) SKIPPED</span>{{end}}</h1>
<dl><dt>commit</dt><dd>{{.Source.Commit}}</dd><dt>machine</dt><dd>{{.Source.Machine}}</dd>
<dt>command</dt><dd><code>{{.Source.Command}}</code></dd><dt>finished</dt><dd>{{utc .FinishedAt}}</dd></dl>
<p>A gate passes only with at least one check and every check passing. A skipped gate did not run and is not a pass.</p>
<table><tr><th>gate</th><th>result</th><th>duration</th><th>checks</th><th>own report</th><th>error</th></tr>
{{range .Results}}<tr><td><a href="#{{.Gate}}">{{.Gate}}</a></td>
{{if .Skipped}}<td class="skip">SKIPPED</td>{{else}}<td class="{{if .Passed}}pass{{else}}fail{{end}}">{{if .Passed}}PASS{{else}}FAIL{{end}}</td>{{end}}
<td class="n">{{printf "%.1f s" .DurationS}}</td><td class="n">{{len .Checks}}</td><td>{{range pages .}}<a href="{{.}}">{{.}}</a> {{end}}</td><td>{{if .Skipped}}skipped: {{.SkipReason}}{{else}}{{.Error}}{{end}}</td></tr>
{{end}}</table>
{{range .Results}}<h2 id="{{.Gate}}">{{.Gate}} — {{.Title}}</h2>
{{if .Skipped}}<p class="skip">SKIPPED (not a pass): {{.SkipReason}}</p>{{end}}
{{if .Error}}<p class="fail">{{.Error}}</p>{{end}}
{{range pages .}}<p>Report: <a href="{{.}}">{{.}}</a></p>{{end}}
{{if .Metrics}}<table><tr><th>metric</th><th>value</th></tr>{{$m := .Metrics}}{{range metricKeys $m}}<tr><td>{{.}}</td><td class="n">{{num (index $m .)}}</td></tr>{{end}}</table>{{end}}
{{if .Checks}}<table><tr><th>check</th><th>result</th><th>detail</th></tr>
{{range .Checks}}<tr><td>{{.Name}}</td>{{if .Skipped}}<td class="skip">SKIPPED</td>{{else}}<td class="{{if .Passed}}pass{{else}}fail{{end}}">{{if .Passed}}pass{{else}}FAIL{{end}}</td>{{end}}<td><pre>{{.Detail}}</pre></td></tr>
{{end}}</table>{{end}}
{{end}}</body></html>
`))

func writeHTML(path string, s Summary) error {
	for _, r := range s.Results {
		r.reportDir = s.reportDir
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("gates: create %s: %w", path, err)
	}
	if err := reportTmpl.Execute(f, s); err != nil {
		f.Close()
		return fmt.Errorf("gates: render %s: %w", path, err)
	}
	return f.Close()
}

// htmlArtifacts are a gate's HTML reports, as links relative to the report directory. Gates
// record artifacts either relative to the report directory (chaos/chaos.html) or as the path
// they wrote (out/release/perf-loadgen.html, relative to the working directory); both resolve.
func htmlArtifacts(r *Result) []string {
	var out []string
	for _, a := range r.Artifacts {
		if !strings.HasSuffix(a, ".html") {
			continue
		}
		if _, err := os.Stat(filepath.Join(r.reportDir, a)); err != nil || filepath.IsAbs(a) {
			absA, errA := filepath.Abs(a)
			absD, errD := filepath.Abs(r.reportDir)
			if rel, err := filepath.Rel(absD, absA); errA == nil && errD == nil && err == nil && !strings.HasPrefix(rel, "..") {
				a = rel
			}
		}
		out = append(out, filepath.ToSlash(a))
	}
	return out
}

// formatNumber renders a metric for reading: integers whole, 2 decimals from 1 up, 5 significant
// digits below 1 (so 0.9999766 stays distinguishable from 1), exponent notation below 0.001.
func formatNumber(v float64) string {
	switch a := math.Abs(v); {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return strconv.FormatFloat(v, 'g', -1, 64)
	case v == math.Trunc(v) && a < 1e15:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case a >= 0.001:
		return strconv.FormatFloat(v, 'g', 5, 64)
	}
	return strconv.FormatFloat(v, 'e', 2, 64)
}
