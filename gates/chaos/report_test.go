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
