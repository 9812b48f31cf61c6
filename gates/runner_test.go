package gates

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type fakeGate struct {
	name string
	run  func(r *Result)
}

func (g fakeGate) Name() string                             { return g.name }
func (g fakeGate) Title() string                            { return "fake " + g.name }
func (g fakeGate) Run(_ context.Context, _ *Env, r *Result) { g.run(r) }

func TestRunnerDecidesPassFromEvidence(t *testing.T) {
	cases := []struct {
		name string
		run  func(r *Result)
		pass bool
	}{
		{"all checks pass", func(r *Result) { r.Check("a", true, "ok") }, true},
		{"no evidence fails", func(r *Result) { r.Metric("x", 1) }, false},
		{"one failed check", func(r *Result) { r.Check("a", true, ""); r.Check("b", false, "bad") }, false},
		{"error with passing checks", func(r *Result) { r.Check("a", true, ""); r.Fail(os.ErrNotExist) }, false},
		{"panic fails the gate", func(r *Result) { r.Check("a", true, ""); panic("boom") }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			g := fakeGate{name: "g", run: c.run}
			sum, err := Run(context.Background(), []Gate{g}, RunOptions{ReportDir: dir, Progress: &bytes.Buffer{}})
			if err != nil {
				t.Fatal(err)
			}
			if sum.Passed != c.pass || sum.Results[0].Passed != c.pass {
				t.Fatalf("passed = %v, want %v (%+v)", sum.Passed, c.pass, sum.Results[0])
			}
			raw, err := os.ReadFile(filepath.Join(dir, "g.json"))
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"gate", "passed", "duration_s", "metrics", "checks"} {
				if _, ok := m[k]; !ok {
					t.Errorf("%s missing from gate JSON", k)
				}
			}
			if m["passed"] != c.pass {
				t.Errorf("json passed = %v", m["passed"])
			}
			if _, err := os.Stat(filepath.Join(dir, "report.html")); err != nil {
				t.Errorf("report.html: %v", err)
			}
		})
	}
}

func TestEmptyRunFails(t *testing.T) {
	sum, err := Run(context.Background(), nil, RunOptions{ReportDir: t.TempDir(), Progress: &bytes.Buffer{}})
	if err != nil || sum.Passed {
		t.Fatalf("empty run: passed=%v err=%v", sum.Passed, err)
	}
}

func TestRecordTallyFromGoTestJSON(t *testing.T) {
	events := strings.Join([]string{
		`{"Action":"run","Package":"p/a","Test":"TestX"}`,
		`{"Action":"output","Package":"p/a","Test":"TestX","Output":"boom\n"}`,
		`{"Action":"fail","Package":"p/a","Test":"TestX"}`,
		`{"Action":"fail","Package":"p/a","Elapsed":0.5}`,
		`{"Action":"pass","Package":"p/b","Test":"TestY"}`,
		`{"Action":"pass","Package":"p/b","Elapsed":0.1}`,
		`{"Action":"skip","Package":"p/c","Elapsed":0}`,
	}, "\n")
	r := &Result{}
	recordTally(r, tallyEvents(strings.NewReader(events), &Env{}))
	if r.Metrics["tests_passed"] != 1 || r.Metrics["tests_failed"] != 1 {
		t.Fatalf("metrics = %v", r.Metrics)
	}
	var failed []string
	for _, c := range r.Checks {
		if !c.Passed {
			failed = append(failed, c.Name)
			if !strings.Contains(c.Detail, "boom") {
				t.Errorf("failure detail lacks the test output: %q", c.Detail)
			}
		}
	}
	if len(failed) != 1 || failed[0] != "package p/a" {
		t.Fatalf("failed checks = %v", failed)
	}
}

// TestSkippedGateIsReportedNotPassed: a skipped gate does not run, is never marked passed, says
// its reason in the JSON and the HTML report, and does not fail the run by itself; a run of
// nothing but skipped gates is not a pass (no evidence).
func TestSkippedGateIsReportedNotPassed(t *testing.T) {
	dir := t.TempDir()
	ran := false
	skipped := fakeGate{name: "s", run: func(r *Result) { ran = true; r.Check("a", true, "") }}
	good := fakeGate{name: "g", run: func(r *Result) { r.Check("a", true, "ok") }}
	reason := "hot history is unbounded until tiered history is built"
	sum, err := Run(context.Background(), []Gate{good, skipped}, RunOptions{ReportDir: dir, Progress: &bytes.Buffer{},
		Skip: map[string]string{"s": reason}})
	if err != nil {
		t.Fatal(err)
	}
	s := sum.Results[1]
	if ran || !sum.Passed || s.Passed || !s.Skipped || s.SkipReason != reason || len(sum.Skipped) != 1 {
		t.Fatalf("summary %+v, skipped result %+v, ran %v", sum, s, ran)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "s.json"))
	if err != nil || !strings.Contains(string(raw), `"skipped": true`) || !strings.Contains(string(raw), reason) {
		t.Fatalf("s.json %s: %v", raw, err)
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil || !strings.Contains(string(html), "SKIPPED (not a pass): "+reason) {
		t.Fatalf("report.html lacks the skip: %v", err)
	}
	only, err := Run(context.Background(), []Gate{skipped}, RunOptions{ReportDir: t.TempDir(), Progress: &bytes.Buffer{},
		Skip: map[string]string{"s": reason}})
	if err != nil || only.Passed {
		t.Fatalf("a run of only skipped gates passed: %+v, %v", only, err)
	}
}

// The line saying why a test failed survives the server logs an integration test prints after
// it (itest dumps the stack's logs on failure), and a passing test's log lines are not reasons.
func TestRecordTallyKeepsTheReasonBeforeTheLogs(t *testing.T) {
	ev := func(test, action, out string) string {
		b, _ := json.Marshal(map[string]string{"Action": action, "Package": "p/a", "Test": test, "Output": out})
		return string(b)
	}
	lines := []string{ev("TestOK", "output", "    ok_test.go:9: passed in 1s\n"), ev("TestOK", "pass", ""),
		ev("TestX", "output", "    x_test.go:42: bob's 4 copies: not within 30s\n")}
	for i := range 1000 {
		lines = append(lines, ev("TestX", "output", fmt.Sprintf("            [kafka] INFO line %d\n", i)))
	}
	lines = append(lines, ev("TestX", "fail", ""), `{"Action":"fail","Package":"p/a","Elapsed":1}`)
	r := &Result{}
	recordTally(r, tallyEvents(strings.NewReader(strings.Join(lines, "\n")), &Env{}))
	for _, c := range r.Checks {
		if c.Name != "package p/a" {
			continue
		}
		if !strings.Contains(c.Detail, "x_test.go:42: bob's 4 copies") || strings.Contains(c.Detail, "ok_test.go:9") {
			t.Fatalf("detail: %.400q", c.Detail)
		}
		return
	}
	t.Fatal("no check for the failing package")
}
