package gates

import (
	"fmt"
	"html/template"
	"os"
	"sort"
	"time"
)

var reportTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"metricKeys": func(m map[string]float64) []string {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return keys
	},
	"now": func() string { return time.Now().UTC().Format(time.RFC3339) },
}).Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>qim-gate report</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;max-width:70em}
.pass{color:#17692f}.fail{color:#b3261e}.skip{color:#8a6d00}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:.25em .6em;vertical-align:top;text-align:left}
pre{margin:0;white-space:pre-wrap;max-height:20em;overflow:auto;font-size:12px}
h2{margin-top:1.5em}
</style></head><body>
<h1>qim-gate run: {{if .Passed}}<span class="pass">PASSED</span>{{else}}<span class="fail">FAILED</span>{{end}}{{if .Skipped}} <span class="skip">with {{len .Skipped}} gate(s) SKIPPED</span>{{end}}</h1>
<p>Generated {{now}}. A gate passes only with at least one check and every check passing. A skipped gate did not run and is not a pass.</p>
<table><tr><th>gate</th><th>result</th><th>duration</th><th>checks</th><th>error</th></tr>
{{range .Results}}<tr><td><a href="#{{.Gate}}">{{.Gate}}</a></td>
{{if .Skipped}}<td class="skip">SKIPPED</td>{{else}}<td class="{{if .Passed}}pass{{else}}fail{{end}}">{{if .Passed}}PASS{{else}}FAIL{{end}}</td>{{end}}
<td>{{printf "%.1f s" .DurationS}}</td><td>{{len .Checks}}</td><td>{{if .Skipped}}skipped: {{.SkipReason}}{{else}}{{.Error}}{{end}}</td></tr>
{{end}}</table>
{{range .Results}}<h2 id="{{.Gate}}">{{.Gate}} — {{.Title}}</h2>
{{if .Skipped}}<p class="skip">SKIPPED (not a pass): {{.SkipReason}}</p>{{end}}
{{if .Error}}<p class="fail">{{.Error}}</p>{{end}}
{{if .Metrics}}<table><tr><th>metric</th><th>value</th></tr>{{$m := .Metrics}}{{range metricKeys $m}}<tr><td>{{.}}</td><td>{{index $m .}}</td></tr>{{end}}</table>{{end}}
{{if .Checks}}<table><tr><th>check</th><th>result</th><th>detail</th></tr>
{{range .Checks}}<tr><td>{{.Name}}</td>{{if .Skipped}}<td class="skip">SKIPPED</td>{{else}}<td class="{{if .Passed}}pass{{else}}fail{{end}}">{{if .Passed}}pass{{else}}FAIL{{end}}</td>{{end}}<td><pre>{{.Detail}}</pre></td></tr>
{{end}}</table>{{end}}
{{end}}</body></html>
`))

func writeHTML(path string, s Summary) error {
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
