package perf

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/qim-dev/qim/gates"
	"github.com/qim-dev/qim/loadgen"
)

// writeLoadArtifacts writes <name>.json and <name>.html into the report dir.
func writeLoadArtifacts(env *gates.Env, r *gates.Result, name string, rep *loadgen.Report) {
	jsonPath, htmlPath := filepath.Join(env.ReportDir, name+".json"), filepath.Join(env.ReportDir, name+".html")
	b, err := json.MarshalIndent(rep, "", "  ")
	if err == nil {
		err = os.WriteFile(jsonPath, append(b, '\n'), 0o644)
	}
	if err == nil {
		err = os.WriteFile(htmlPath, loadgen.RenderHTML(rep), 0o644)
	}
	if err != nil {
		r.Fail(fmt.Errorf("gates: perf artifacts: %w", err))
		return
	}
	r.Artifacts = append(r.Artifacts, jsonPath, htmlPath)
	env.Progressf("report: %s", htmlPath)
}

// perfMetrics copies a report's headline numbers into the gate result.
func perfMetrics(r *gates.Result, prefix string, rep *loadgen.Report) {
	m := func(k string, v float64) { r.Metric(prefix+k, v) }
	m("target_rate", rep.TargetRate)
	m("achieved_send_rate", rep.AchievedSendRate)
	m("arrival_ratio", rep.ArrivalRatio)
	m("ack_rate", rep.AckRate)
	for name, s := range rep.Segments {
		m(name+"_p50_ms", s.P50Ms)
		m(name+"_p99_ms", s.P99Ms)
		m(name+"_max_ms", s.MaxMs)
	}
	c := rep.Counts
	for k, v := range map[string]int64{"sent": c.Sent, "acked": c.Acked, "unsent": c.Unsent, "missing": c.Missing,
		"duplicates_after_dedup": c.DuplicatesAfterDedup, "raw_duplicates": c.RawDuplicates, "errors": c.Errors,
		"timeouts": c.Timeouts} {
		m(k, float64(v))
	}
	m("cpu_ms_per_msg", rep.CPU.MsPerMessage)
	groupMetrics(r, prefix, rep)
	roomMetrics(r, prefix, rep)
	m("cpu_total_s", rep.CPU.TotalS)
	m("loadgen_cpu_s", rep.CPU.LoadgenS)
	m("machine_busy_cores", rep.CPU.MachineBusyCores)
	for _, p := range rep.CPU.Procs {
		m("cpu_s_"+p.Name, p.CPUS)
		m("cpu_ms_per_msg_"+p.Name, rep.CPU.ProcShare(p))
		if p.SyscallsPerMsg > 0 {
			m("syscalls_per_msg_"+p.Name, p.SyscallsPerMsg)
			m("ctx_switches_per_msg_"+p.Name, p.SwitchesPerMsg)
		}
	}
}
