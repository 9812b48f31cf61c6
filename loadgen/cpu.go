package loadgen

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat and /proc/stat times. It is 100 on every
// Linux architecture Go supports (the kernel's HZ may differ; USER_HZ is fixed for userland),
// which is why it is not read through sysconf (that needs cgo).
const clockTicks = 100

// Proc is a process whose CPU time is accounted over the measured window.
type Proc struct {
	Name string // service or server name ("gateway", "redis-core", "kafka", ...)
	Pid  int
}

// procTimes is one /proc/<pid>/stat reading, plus the process's syscall and context-switch
// counts when readable (they explain CPU on a machine where wake-ups dominate: see docs/perf.md).
type procTimes struct {
	ticks uint64 // utime + stime of all threads
	// reaped is cutime + cstime: the CPU of children the process has waited for. Redis forks
	// for every AOF rewrite (and RDB save); in one 15 s perf window at 1,000 msg/s the rewrite
	// child had 15–19 % of a Redis server's samples, work of the system under test that
	// utime + stime leave out. A child still running when the window closes is missed and one
	// reaped inside it counts whole; a long window averages the edges out. The loadgen's own
	// reading leaves it out: its children, when it has any, are the stack it runs against.
	reaped    uint64
	startTime uint64 // identifies the process across pid reuse
	err       error
	activity  activity
}

// activity counts what a process asked of the kernel: read- and write-class syscalls
// (/proc/<pid>/io syscr + syscw) and context switches of all its threads.
type activity struct {
	syscalls, switches uint64
	ok                 bool
}

// cpuSample is one reading of every accounted process, the loadgen itself and the machine.
type cpuSample struct {
	procs   []procTimes
	names   []Proc
	self    procTimes
	machine machineTimes
}

type machineTimes struct {
	busy, total uint64
	err         error
}

func sampleCPU(procs []Proc) cpuSample {
	s := cpuSample{names: procs, self: readProcTimes(os.Getpid()), machine: readMachineTimes()}
	for _, p := range procs {
		s.procs = append(s.procs, readProcTimes(p.Pid))
	}
	return s
}

// readProcTimes reads utime (field 14), stime (15), cutime (16), cstime (17) and starttime (22)
// of /proc/<pid>/stat.
func readProcTimes(pid int) procTimes {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procTimes{err: fmt.Errorf("loadgen: cpu of pid %d: %w", pid, err)}
	}
	t := parseProcStat(b)
	t.activity = readActivity(pid)
	return t
}

// readActivity is best effort: /proc/<pid>/io needs the same user, and a thread may exit
// between listing and reading; a failed reading leaves the per-message counts out of the report.
func readActivity(pid int) activity {
	dir := "/proc/" + strconv.Itoa(pid)
	b, err := os.ReadFile(dir + "/io")
	if err != nil {
		return activity{}
	}
	a := activity{syscalls: procField(b, "syscr:") + procField(b, "syscw:"), ok: true}
	tasks, err := os.ReadDir(dir + "/task")
	if err != nil {
		return activity{}
	}
	for _, t := range tasks {
		st, err := os.ReadFile(dir + "/task/" + t.Name() + "/status")
		if err != nil {
			continue // the thread exited; its switches are lost, a small undercount
		}
		a.switches += procField(st, "voluntary_ctxt_switches:") + procField(st, "nonvoluntary_ctxt_switches:")
	}
	return a
}

// procField returns the number after key at the start of a line of a /proc file (0 if absent).
func procField(b []byte, key string) uint64 {
	for line := range bytes.Lines(b) {
		if rest, ok := bytes.CutPrefix(line, []byte(key)); ok {
			v, _ := strconv.ParseUint(string(bytes.TrimSpace(rest)), 10, 64)
			return v
		}
	}
	return 0
}

func parseProcStat(b []byte) procTimes {
	i := bytes.LastIndexByte(b, ')') // comm may contain spaces and parentheses
	if i < 0 {
		return procTimes{err: fmt.Errorf("loadgen: unexpected /proc stat line")}
	}
	fs := strings.Fields(string(b[i+1:])) // fs[0] is field 3 (state)
	if len(fs) < 20 {
		return procTimes{err: fmt.Errorf("loadgen: short /proc stat line")}
	}
	var v [4]uint64 // utime, stime, cutime, cstime
	for i, f := range fs[11:15] {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return procTimes{err: fmt.Errorf("loadgen: bad /proc stat CPU time %q", f)}
		}
		v[i] = n
	}
	start, err := strconv.ParseUint(fs[19], 10, 64)
	if err != nil {
		return procTimes{err: fmt.Errorf("loadgen: bad /proc stat start time %q", fs[19])}
	}
	return procTimes{ticks: v[0] + v[1], reaped: v[2] + v[3], startTime: start}
}

// readMachineTimes reads the aggregate cpu line of /proc/stat: busy = everything but idle and
// iowait.
func readMachineTimes() machineTimes {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineTimes{err: err}
	}
	return parseMachineStat(b)
}

func parseMachineStat(b []byte) machineTimes {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	fs := strings.Fields(string(line))
	if len(fs) < 6 || fs[0] != "cpu" {
		return machineTimes{err: fmt.Errorf("loadgen: unexpected /proc/stat")}
	}
	var m machineTimes
	for i, f := range fs[1:] {
		if i >= 8 { // guest times are already inside user/nice
			break
		}
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return machineTimes{err: fmt.Errorf("loadgen: bad /proc/stat number %q", f)}
		}
		m.total += v
		if i != 3 && i != 4 { // idle, iowait
			m.busy += v
		}
	}
	return m
}

// CPUReport is the CPU time spent during the measured window.
type CPUReport struct {
	WindowS float64   `json:"window_s"`
	Procs   []ProcCPU `json:"processes"`
	// TotalS sums Procs: the system under test (services, Redis, Kafka), not the loadgen.
	TotalS float64 `json:"total_s"`
	// MsPerMessage is TotalS in ms divided by the messages ACKed inside the window.
	MsPerMessage float64 `json:"ms_per_message"`
	// MsPerEntry (group mode) is TotalS in ms divided by the mailbox entries delivered inside
	// the window: a group message costs the system once per member, which per message hides.
	MsPerEntry float64 `json:"ms_per_entry,omitempty"`
	// EntryUnit names what MsPerEntry divides by: "mailbox entry" (group mode) or "room
	// event" (room mode: one event read by one member).
	EntryUnit string  `json:"entry_unit,omitempty"`
	LoadgenS  float64 `json:"loadgen_s"`
	// MachineBusyCores is the whole machine's busy time per second of window (all processes,
	// neighbours included): how loaded the box was while the numbers were taken.
	MachineBusyCores float64 `json:"machine_busy_cores"`
	MachineIdlePct   float64 `json:"machine_idle_pct"`
	// Complete is true when every process was read before and after the window (same process:
	// same start time). A missing reading makes the per-message figure a lower bound.
	Complete bool `json:"complete"`
}

// ProcCPU is one process's share.
type ProcCPU struct {
	Name  string  `json:"name"`
	Pid   int     `json:"pid"`
	CPUS  float64 `json:"cpu_s"`
	Cores float64 `json:"cores"` // CPUS / window
	Error string  `json:"error,omitempty"`
	// SyscallsPerMsg and SwitchesPerMsg are read+write syscalls and context switches (all
	// threads) per ACKed message over the window; 0 when /proc did not say.
	SyscallsPerMsg float64 `json:"syscalls_per_msg,omitempty"`
	SwitchesPerMsg float64 `json:"ctx_switches_per_msg,omitempty"`
}

func cpuReport(before, after cpuSample, windowS float64, acked int64) CPUReport {
	rep := CPUReport{WindowS: windowS, Complete: len(before.names) > 0}
	for i, p := range before.names {
		pc := ProcCPU{Name: p.Name, Pid: p.Pid}
		b, a := before.procs[i], after.procs[i]
		switch {
		case b.err != nil:
			pc.Error = b.err.Error()
		case a.err != nil:
			pc.Error = a.err.Error()
		case a.startTime != b.startTime:
			pc.Error = "process restarted during the window"
		default:
			pc.CPUS = float64(a.ticks+a.reaped-b.ticks-b.reaped) / clockTicks
			pc.Cores = pc.CPUS / windowS
			if b.activity.ok && a.activity.ok && acked > 0 {
				pc.SyscallsPerMsg = float64(a.activity.syscalls-b.activity.syscalls) / float64(acked)
				pc.SwitchesPerMsg = float64(a.activity.switches-b.activity.switches) / float64(acked)
			}
		}
		rep.Complete = rep.Complete && pc.Error == ""
		rep.TotalS += pc.CPUS
		rep.Procs = append(rep.Procs, pc)
	}
	if acked > 0 {
		rep.MsPerMessage = rep.TotalS * 1000 / float64(acked)
	}
	if before.self.err == nil && after.self.err == nil {
		rep.LoadgenS = float64(after.self.ticks-before.self.ticks) / clockTicks
	}
	if bm, am := before.machine, after.machine; bm.err == nil && am.err == nil && am.total > bm.total {
		busy, total := float64(am.busy-bm.busy), float64(am.total-bm.total)
		rep.MachineBusyCores = busy / clockTicks / windowS
		rep.MachineIdlePct = 100 * (1 - busy/total)
	}
	return rep
}
