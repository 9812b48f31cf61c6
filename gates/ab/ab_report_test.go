package ab

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestABReportTable(t *testing.T) {
	rep := &ABReport{Baseline: abSide{Name: "baseline", Ref: "475a8d3", Commit: "475a8d3aaaa"},
		Candidate: abSide{Name: "candidate", Ref: "HEAD", Commit: "ea9186bbbbb"}}
	for i, run := range []ABRun{
		{Round: 1, Side: "baseline", Passed: true, Metrics: map[string]float64{"end_to_end_p99_ms": 200, "cpu_ms_per_msg": 6, "cpu_ms_per_msg_kafka": 1.8}},
		{Round: 1, Side: "candidate", Passed: true, Metrics: map[string]float64{"end_to_end_p99_ms": 100, "cpu_ms_per_msg": 3, "redis_cmds_per_msg_redis-core": 4}},
		{Round: 2, Side: "candidate", Passed: false, Metrics: map[string]float64{"end_to_end_p99_ms": 120, "cpu_ms_per_msg": 3.2}},
		{Round: 2, Side: "baseline", Passed: true, Metrics: map[string]float64{"end_to_end_p99_ms": 180, "cpu_ms_per_msg": 6.4, "unrelated": 1}},
	} {
		run.Commit = []string{"475a8d3aaaa", "ea9186bbbbb", "ea9186bbbbb", "475a8d3aaaa"}[i]
		rep.Runs = append(rep.Runs, run)
	}
	md := rep.Markdown()
	for _, want := range []string{
		"| SLO verdict | PASS PASS | PASS FAIL |",
		"| end_to_end_p99_ms | 200 · 180 | 100 · 120 | 190 | 110 | 0.579 |",
		"| cpu_ms_per_msg | 6.000 · 6.400 | 3.000 · 3.200 | 6.200 | 3.100 | 0.500 |",
		"| cpu_ms_per_msg_kafka | 1.800 · — | — · — | 1.800 | — | — |", // a metric one run lacks is shown, never invented
		"| redis_cmds_per_msg_redis-core | — · — | 4.000 · — |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("table lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "unrelated") {
		t.Errorf("a metric outside the comparison's rows is shown:\n%s", md)
	}
	if !math.IsNaN(median(nil)) || median([]float64{3, 1, 2}) != 2 || median([]float64{4, 1, math.NaN()}) != 2.5 {
		t.Error("median")
	}
	dir := t.TempDir()
	if err := rep.write(dir); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "ab.html"))
	if err != nil || !strings.Contains(string(page), "<svg") || !strings.Contains(string(page), "end_to_end_p99_ms") {
		t.Fatalf("ab.html: %v", err)
	}
}

// A find-max run has no single measured window: its line gives the capacity, not zeros.
func TestABRunLine(t *testing.T) {
	fm := ABRun{Passed: true, Metrics: map[string]float64{"max_passing_rate": 734, "capacity_cpu_ms_per_msg": 2.2,
		"capacity_kafka_requests_per_msg": 1.5}}
	if got, want := fm.line(), "PASS: find-max 734 msg/s (capacity CPU 2.200 ms/msg, 1.50 broker requests/msg)"; got != want {
		t.Errorf("find-max line %q, want %q", got, want)
	}
	run := ABRun{Failed: []string{"end-to-end p99"}, Metrics: map[string]float64{"send_ack_p99_ms": 20, "end_to_end_p99_ms": 400,
		"cpu_ms_per_msg": 3, "kafka_requests_per_msg": 2}}
	if got, want := run.line(), "FAIL (end-to-end p99): ACK p99 20.0 ms, e2e p99 400.0 ms, 3.000 CPU ms/msg, 2.00 broker requests/msg"; got != want {
		t.Errorf("run line %q, want %q", got, want)
	}
}

// A side deployed as one process says so in the table: the topology is part of what is compared.
func TestABReportNamesTheTopology(t *testing.T) {
	rep := &ABReport{Baseline: abSide{Name: "baseline", Commit: "475a8d3aaaa"},
		Candidate: abSide{Name: "candidate", Commit: "2f00185bbbb", OneProcess: true}}
	if head, _, _ := strings.Cut(rep.Markdown(), "\n"); !strings.Contains(head, "baseline 475a8d3 (runs)") ||
		!strings.Contains(head, "candidate 2f00185 (qim all) (runs)") {
		t.Fatalf("header %q", head)
	}
}
