package gates

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestFailedRunNamesItsGatesLast: a CI log is often read from its tail, so the run's last
// progress lines and its error name each failed gate with its reason; passing and skipped gates
// are not named.
func TestFailedRunNamesItsGatesLast(t *testing.T) {
	long := "x" + strings.Repeat("é", failureDetailMax) // multi-byte: the cut must keep valid UTF-8
	gs := []Gate{
		fakeGate{name: "lint", run: func(r *Result) { r.Check("a", true, "ok") }},
		fakeGate{name: "perf", run: func(r *Result) {
			r.Check("slo", false, "e2e p99 412 ms\n> 300 ms")
			r.Check("lost", true, "0")
		}},
		fakeGate{name: "e2e", run: func(r *Result) { r.Check("x", false, "%s", long) }},
		fakeGate{name: "empty", run: func(r *Result) {}},
		fakeGate{name: "skipped", run: func(r *Result) { r.Check("a", false, "") }},
	}
	var progress bytes.Buffer
	sum, err := Run(context.Background(), gs, RunOptions{ReportDir: t.TempDir(), Progress: &progress,
		Skip: map[string]string{"skipped": "not today"}})
	if err != nil {
		t.Fatal(err)
	}
	runErr := sum.Err()
	var gf *GatesFailedError
	if !errors.As(runErr, &gf) || !errors.Is(runErr, ErrGatesFailed) {
		t.Fatalf("run error %v: want a *GatesFailedError wrapping ErrGatesFailed", runErr)
	}
	if want := "qim-gate: 3 of 4 gates failed: perf, e2e, empty"; runErr.Error() != want {
		t.Fatalf("run error %q, want %q", runErr, want)
	}
	lines := strings.Split(strings.TrimSpace(progress.String()), "\n")
	tail := lines[len(lines)-3:]
	wantTail := []string{
		"FAILED perf: check slo failed: e2e p99 412 ms > 300 ms",
		"FAILED e2e: check x failed: ",
		"FAILED empty: no check ran (no evidence is a failure)",
	}
	for i, w := range wantTail {
		if !strings.HasPrefix(tail[i], w) {
			t.Errorf("progress line %d from the end = %q, want prefix %q", 3-i, tail[i], w)
		}
	}
	if e2e := tail[1]; len(e2e) > len("FAILED e2e: ")+failureDetailMax+len("…") || !strings.HasSuffix(e2e, "…") ||
		!strings.ContainsRune(e2e, 'é') || strings.ContainsRune(e2e, '\uFFFD') || !utf8.ValidString(e2e) {
		t.Errorf("a long reason is not clipped to one valid line: %d bytes", len(e2e))
	}
	ok, _ := Run(context.Background(), gs[:1], RunOptions{ReportDir: t.TempDir(), Progress: &bytes.Buffer{}})
	if ok.Err() != nil || len(ok.Failures()) != 0 {
		t.Fatalf("a passing run has error %v, failures %v", ok.Err(), ok.Failures())
	}
}
