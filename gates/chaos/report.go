package chaos

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/qim-dev/qim/chaos/check"
	"github.com/qim-dev/qim/loadgen"
)

// reportSchema is the version of chaos.json; bump it when a field changes meaning.
const reportSchema = 1

// Report is chaos.json: the matrix (cell × verdict counts) with each cell's timeline.
type Report struct {
	SchemaVersion int           `json:"schema_version"`
	StartedAt     time.Time     `json:"started_at"`
	DurationS     float64       `json:"duration_s"`
	Options       ReportOptions `json:"options"`
	Passed        bool          `json:"passed"`
	Cells         []*CellResult `json:"cells"`
	// Source, Stability and Passes are filled for a repeated run (Options.Repeat > 1).
	Source    StabilityRun    `json:"source,omitzero"`
	Stability []CellStability `json:"stability,omitempty"`
	Passes    []PassResult    `json:"passes,omitempty"`
}

// ReportOptions echoes the run's settings.
type ReportOptions struct {
	Rate        float64 `json:"rate"`
	Connections int     `json:"connections"`
	SDKPercent  int     `json:"sdk_percent"`
	WindowS     float64 `json:"window_s"`
	FaultAtS    float64 `json:"fault_at_s"`
	StallAfterS float64 `json:"stall_after_s"`
	Repeat      int     `json:"repeat"`
}

func reportOptions(o Options) ReportOptions {
	return ReportOptions{Rate: o.Rate, Connections: o.Connections, SDKPercent: o.SDKPercent,
		WindowS: o.Window.Seconds(), FaultAtS: o.FaultAt.Seconds(), StallAfterS: o.StallAfter.Seconds(), Repeat: o.Repeat}
}

// Check is one judgement of a cell.
type Check struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	Detail string `json:"detail"`
}

// CellResult is one cell: its judgements, the checker's verdict counts, recovery times and the
// load timeline (1 s windows) with the fault and heal marked.
type CellResult struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	Class string `json:"class"` // the fault class (Cell.Class)
	Quick bool   `json:"quick"`
	// Pass is the pass of a repeated run this result belongs to (1 when not repeated).
	Pass   int    `json:"pass"`
	Passed bool   `json:"passed"`
	NotRun string `json:"not_run,omitempty"`
	// Skipped says why the cell could not run on this stack (a NeedsCQL cell without a CQL
	// node). A skipped cell is not a pass: the gate reports it as skipped.
	Skipped       string              `json:"skipped,omitempty"`
	DurationS     float64             `json:"duration_s"`
	Checks        []Check             `json:"checks"`
	FaultS        float64             `json:"fault_s"` // since the load started
	HealS         float64             `json:"heal_s"`
	FaultUs       int64               `json:"fault_us"` // Unix µs, for qim-gate check-history --fault-us
	HealUs        int64               `json:"heal_us"`
	RecoveryAckMs float64             `json:"recovery_ack_ms"` // fault → first SEND_ACK of a send made after it
	DrainMs       float64             `json:"drain_ms"`        // fault → last message accepted before the heal delivered
	Checker       *check.Result       `json:"checker,omitempty"`
	Room          *loadgen.RoomReport `json:"room,omitempty"` // a room cell's delivery and rejoins
	Load          LoadSummary         `json:"load"`
	Timeline      []loadgen.Window    `json:"timeline"`
	WindowS       float64             `json:"window_s"` // the cell's load window
	AuditRecords  int64               `json:"audit_outbox_records"`
	// Restarts are services that exited on their own during the cell and were restarted by the
	// supervisor (supervise.go), with when and why.
	Restarts []string `json:"supervisor_restarts,omitempty"`
	// Logs is the directory (in the report dir) holding the services' logs of the cell.
	Logs    string `json:"logs,omitempty"`
	History string `json:"history,omitempty"` // file name in the report dir
	Events  int    `json:"history_events"`
}

// LoadSummary is the load generator's view of the cell.
type LoadSummary struct {
	Sent       int64   `json:"sent"`
	Acked      int64   `json:"acked"`
	Failed     int64   `json:"failed"`
	Unknown    int64   `json:"unknown"`
	Missing    int64   `json:"missing"`
	Reconnects int64   `json:"reconnects"`
	SDKSent    int64   `json:"sdk_sent"`
	SDKAcked   int64   `json:"sdk_acked"`
	SDKMissing int64   `json:"sdk_missing"`
	AckP99Ms   float64 `json:"send_ack_p99_ms"`
	E2EP99Ms   float64 `json:"end_to_end_p99_ms"`
}

func (r *CellResult) check(name string, ok bool, format string, args ...any) bool {
	r.Checks = append(r.Checks, Check{Name: name, Passed: ok, Detail: fmt.Sprintf(format, args...)})
	return ok
}

func (r *CellResult) fail(step string, err error) { r.check(step, false, "%v", err) }

// finish decides Passed: at least one check, all passed, and the checker ran.
func (r *CellResult) finish(start time.Time) {
	r.DurationS = time.Since(start).Seconds()
	// A load cell passes only with its judge's verdict: the history checker's, or for a room
	// cell the room rule's (cells_room.go).
	r.Passed = len(r.Checks) > 0 && (r.Checker != nil || r.Room != nil)
	for _, c := range r.Checks {
		r.Passed = r.Passed && c.Passed
	}
}

// record copies the load report's numbers and the fault's timing into the result.
func (r *CellResult) record(rep *loadgen.Report, fr *faultRun) {
	c := rep.Counts
	r.Load = LoadSummary{Sent: c.Sent, Acked: c.Acked, Failed: c.Failed, Unknown: c.Unknown, Missing: c.Missing,
		Reconnects: c.Reconnects, SDKSent: rep.SDKLane.Sent, SDKAcked: rep.SDKLane.Acked, SDKMissing: rep.SDKLane.Missing,
		AckP99Ms: rep.Segments[loadgen.SegSendAck.String()].P99Ms, E2EP99Ms: rep.Segments[loadgen.SegEndToEnd.String()].P99Ms}
	r.Timeline = rep.Timeline
	r.Restarts = fr.restarts
	if !fr.faultAt.IsZero() {
		r.FaultS, r.FaultUs = fr.faultAt.Sub(rep.StartedAt).Seconds(), fr.faultAt.UnixMicro()
	}
	if !fr.healAt.IsZero() {
		r.HealS, r.HealUs = fr.healAt.Sub(rep.StartedAt).Seconds(), fr.healAt.UnixMicro()
	}
}

// Summary is one line for people: the failed checks, or the cell's numbers and verdict counts.
func (r *CellResult) Summary() string {
	var failed []string
	for _, c := range r.Checks {
		if !c.Passed {
			failed = append(failed, c.Name+": "+c.Detail)
		}
	}
	if len(failed) > 0 {
		return strings.Join(failed, "; ")
	}
	if r.Room != nil {
		return roomSummary(r)
	}
	if r.Checker == nil { // a go test cell: its one check says what ran
		var ran []string
		for _, c := range r.Checks {
			for _, l := range strings.Split(c.Detail, "\n") {
				if strings.HasPrefix(l, "ok ") && !strings.Contains(l, "[no tests to run]") {
					ran = append(ran, strings.Fields(l)[1])
				}
			}
		}
		return fmt.Sprintf("tests passed in %d packages: %s", len(ran), strings.Join(ran, ", "))
	}
	s := fmt.Sprintf("fault %.1fs, healed %.1fs; acked %d, unknown %d; recovery %.0f ms, drain %.0f ms", r.FaultS, r.HealS,
		r.Load.Acked+r.Load.SDKAcked, r.Load.Unknown, r.RecoveryAckMs, r.DrainMs)
	if r.Checker != nil {
		s += " — " + r.Checker.Summary()
	}
	return s
}

func notRun(c Cell, why error) *CellResult {
	return &CellResult{Name: c.Name, Title: c.Title, Class: c.class(), Quick: c.Quick, NotRun: why.Error(),
		Checks: []Check{{Name: "run", Passed: false, Detail: "not run: " + why.Error()}}}
}

func skipped(c Cell, why string) *CellResult {
	return &CellResult{Name: c.Name, Title: c.Title, Class: c.class(), Quick: c.Quick, Skipped: why}
}

// finish: passed when at least one cell ran and every cell that ran passed (skipped cells are
// reported as such, and the gate shows them as skipped, never as passed).
func (rep *Report) finish() {
	rep.DurationS = time.Since(rep.StartedAt).Seconds()
	ran := 0
	rep.Passed = true
	for _, c := range rep.Cells {
		if c.Skipped != "" {
			continue
		}
		ran++
		rep.Passed = rep.Passed && c.Passed
	}
	rep.Passed = rep.Passed && ran > 0
	if rep.Options.Repeat > 1 {
		rep.Stability, rep.Passes = stability(rep.Cells)
	}
}

// stem names a cell's files in the report directory: the cell, and its pass when repeated.
func (r *CellResult) stem(repeated bool) string {
	if repeated {
		return fmt.Sprintf("%s.pass%d", r.Name, r.Pass)
	}
	return r.Name
}

// Verdicts lists every verdict any cell counted: the failures in the checker's order, then the
// info verdicts.
func (rep *Report) Verdicts() []check.Verdict {
	seen := map[check.Verdict]bool{}
	for _, c := range rep.Cells {
		if c.Checker != nil {
			for v := range c.Checker.Counts {
				seen[v] = true
			}
		}
	}
	var out, info []check.Verdict
	for _, v := range check.Failures {
		if seen[v] {
			out = append(out, v)
		}
	}
	for v := range seen {
		if !v.Failure() {
			info = append(info, v)
		}
	}
	sort.Slice(info, func(i, j int) bool { return info[i] < info[j] })
	return append(out, info...)
}

// write saves chaos.json and chaos.html.
func (rep *Report) write(dir string) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("chaos: encode report: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "chaos.json"), b, 0o644); err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	if err := writeHTML(filepath.Join(dir, "chaos.html"), rep); err != nil {
		return err
	}
	if len(rep.Stability) == 0 {
		return nil
	}
	return writeStability(dir, rep)
}
