package chaos

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qim-dev/qim/chaos/check"
	"github.com/qim-dev/qim/loadgen"
)

func TestReportWritesTheMatrixAndEveryCell(t *testing.T) {
	ok := &CellResult{Name: "gateway-kill", Checks: []Check{{Name: "history checker", Passed: true}},
		Checker: &check.Result{Counts: map[check.Verdict]int{check.Lost: 0, check.UnknownAbsent: 3}, Passed: true},
		FaultS:  8, HealS: 8.3, WindowS: 10, Timeline: []loadgen.Window{{EndS: 1, SendRate: 100, AckRate: 99, DeliverRate: 98}, {EndS: 10, SendRate: 100}}}
	ok.finish(time.Now())
	bad := &CellResult{Name: "kafka-kill", Checks: []Check{{Name: "history checker", Passed: false, Detail: "LOST 1"}},
		Checker: &check.Result{Counts: map[check.Verdict]int{check.Lost: 1, check.UnknownAbsent: 0}}}
	bad.finish(time.Now())
	rep := &Report{StartedAt: time.Now(), Cells: []*CellResult{ok, bad, notRun(Cell{Name: "redis-core-kill"}, os.ErrClosed)}}
	rep.finish()
	if rep.Passed || !ok.Passed || bad.Passed {
		t.Fatalf("passed: report %v, ok %v, bad %v", rep.Passed, ok.Passed, bad.Passed)
	}
	if got := rep.Verdicts(); len(got) != 2 || got[0] != check.Lost || got[1] != check.UnknownAbsent {
		t.Fatalf("verdict columns %v: failures first, then info", got)
	}
	dir := t.TempDir()
	if err := rep.write(dir); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "chaos.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"gateway-kill", "kafka-kill", "redis-core-kill", "LOST", "<svg", ">fault<", ">heal<", "FAILED"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("chaos.html lacks %q", want)
		}
	}
	var back Report
	b, _ := os.ReadFile(filepath.Join(dir, "chaos.json"))
	if err := json.Unmarshal(b, &back); err != nil || len(back.Cells) != 3 || back.Passed {
		t.Fatalf("chaos.json: %v, %d cells, passed %v", err, len(back.Cells), back.Passed)
	}
}

func TestACellWithoutTheCheckerNeverPasses(t *testing.T) {
	c := &CellResult{Checks: []Check{{Name: "fault injected and healed", Passed: true}}}
	c.finish(time.Now())
	if c.Passed {
		t.Fatal("a load cell whose checker never ran passed")
	}
}

// A skipped cell (an archive cell on a stack without CQL) is shown as SKIPPED and neither passes
// nor fails the matrix; a matrix of skipped cells only did not pass.
func TestSkippedCellsNeitherPassNorFail(t *testing.T) {
	ok := &CellResult{Name: "gateway-kill", Checks: []Check{{Name: "history checker", Passed: true}}, Checker: &check.Result{Passed: true}}
	ok.finish(time.Now())
	skip := skipped(Cell{Name: "cql-kill"}, "no CQL node")
	rep := &Report{StartedAt: time.Now(), Cells: []*CellResult{ok, skip}}
	rep.finish()
	if !rep.Passed || skip.Passed {
		t.Fatalf("report passed %v, skipped cell passed %v", rep.Passed, skip.Passed)
	}
	only := &Report{StartedAt: time.Now(), Cells: []*CellResult{skip}}
	if only.finish(); only.Passed {
		t.Fatal("a matrix whose every cell was skipped passed")
	}
	dir := t.TempDir()
	if err := rep.write(dir); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "chaos.html"))
	if err != nil || !strings.Contains(string(page), "SKIPPED") || !strings.Contains(string(page), "no CQL node") {
		t.Fatalf("chaos.html does not show the skipped cell (%v)", err)
	}
}

// A repeated run reports each cell's runs passed of runs made with every run's recovery, each
// pass's verdict of the whole matrix, and stability.md with the command and tree it came from;
// one failed run of one cell fails its pass and shows in its row.
func TestRepeatedRunReportsStability(t *testing.T) {
	cell := func(name string, pass int, ok bool, recovery float64) *CellResult {
		c := &CellResult{Name: name, Pass: pass, RecoveryAckMs: recovery, Checker: &check.Result{Passed: ok},
			Checks: []Check{{Name: "history checker", Passed: ok, Detail: "STALLED 1"}}}
		c.finish(time.Now())
		return c
	}
	skip := func(pass int) *CellResult {
		s := skipped(Cell{Name: "cql-kill"}, "no CQL node")
		s.Pass = pass
		return s
	}
	rep := &Report{StartedAt: time.Now(), Options: ReportOptions{Repeat: 2},
		Source: StabilityRun{Command: "qim-gate run chaos --repeat 2", Commit: "abc1234", Machine: "2 cores"},
		Cells: []*CellResult{cell("gateway-kill", 1, true, 900), cell("rolling", 1, true, 18100), skip(1),
			cell("gateway-kill", 2, true, 950), cell("rolling", 2, false, 34500), skip(2)}}
	rep.finish()
	if rep.Passed {
		t.Fatal("a repeated run with a failed run passed")
	}
	want := []CellStability{
		{Name: "gateway-kill", Runs: 2, Passed: 2, RecoveryMs: []float64{900, 950}},
		{Name: "rolling", Runs: 2, Passed: 1, RecoveryMs: []float64{18100, 34500}, Failures: []string{"pass 2: history checker: STALLED 1"}},
		{Name: "cql-kill", Skipped: "no CQL node"},
	}
	if got, _ := json.Marshal(rep.Stability); string(got) != string(must(json.Marshal(want))) {
		t.Fatalf("stability %s, want %s", got, must(json.Marshal(want)))
	}
	if len(rep.Passes) != 2 || !rep.Passes[0].Passed || rep.Passes[1].Passed || strings.Join(rep.Passes[1].Failed, ",") != "rolling" {
		t.Fatalf("passes %+v", rep.Passes)
	}
	dir := t.TempDir()
	if err := rep.write(dir); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "stability.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"`qim-gate run chaos --repeat 2` on abc1234", "| gateway-kill | 2 of 2 | 900, 950 |  |",
		"| rolling | 1 of 2 | 18100, 34500 | pass 2: history checker: STALLED 1 |", "| cql-kill | skipped |", "| 2 | FAILED | rolling |"} {
		if !strings.Contains(string(md), line) {
			t.Errorf("stability.md lacks %q:\n%s", line, md)
		}
	}
	page, _ := os.ReadFile(filepath.Join(dir, "chaos.html"))
	if !strings.Contains(string(page), "Stability over 2 passes") || !strings.Contains(string(page), `id="rolling.pass2"`) {
		t.Error("chaos.html lacks the stability table or the per-pass cell anchors")
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
