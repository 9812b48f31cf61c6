package loadgen

import (
	"errors"
	"math"
	"os"
	"os/exec"
	"testing"
)

func TestParseProcStat(t *testing.T) {
	// comm with spaces and a parenthesis; utime 1234, stime 766, cutime 300, cstime 200,
	// starttime 98765.
	line := []byte("4242 (java (kafka) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 1234 766 300 200 20 0 80 0 98765 1000 100\n")
	p := parseProcStat(line)
	if p.err != nil || p.ticks != 2000 || p.reaped != 500 || p.startTime != 98765 {
		t.Fatalf("parse = %+v", p)
	}
	if p := parseProcStat([]byte("12 (x) S 1 2")); p.err == nil {
		t.Fatal("short line accepted")
	}
	if self := readProcTimes(os.Getpid()); self.err != nil || self.startTime == 0 {
		t.Fatalf("own /proc stat: %+v", self)
	}
}

// TestProcTimesCountReapedChildren: CPU burnt by a child the process waited for (as Redis waits
// for its AOF-rewrite fork) shows up in the parent's reading, and cpuReport counts it.
func TestProcTimesCountReapedChildren(t *testing.T) {
	before := readProcTimes(os.Getpid())
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done")
	if err := cmd.Run(); err != nil {
		t.Fatalf("busy child: %v", err)
	}
	after := readProcTimes(os.Getpid())
	if before.err != nil || after.err != nil {
		t.Fatalf("readings: %v, %v", before.err, after.err)
	}
	child := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	childTicks := uint64(child.Seconds() * clockTicks)
	if childTicks < 10 {
		t.Skipf("the child used only %v of CPU; too little to tell", child)
	}
	if got := after.reaped - before.reaped; got+2 < childTicks {
		t.Fatalf("parent's reading grew %d ticks while a reaped child used %d", got, childTicks)
	}
	names := []Proc{{Name: "parent", Pid: os.Getpid()}}
	rep := cpuReport(cpuSample{names: names, procs: []procTimes{before}},
		cpuSample{names: names, procs: []procTimes{after}}, 1, 1)
	if got := rep.Procs[0].CPUS * clockTicks; got+2 < float64(childTicks) {
		t.Fatalf("report gives the parent %.0f ticks while a reaped child used %d", got, childTicks)
	}
}

func TestParseMachineStat(t *testing.T) {
	m := parseMachineStat([]byte("cpu  100 5 50 800 20 3 2 0 7 0\ncpu0 1 2 3\n"))
	if m.err != nil || m.total != 980 || m.busy != 160 {
		t.Fatalf("parse = %+v (want total 980, busy 160: idle and iowait excluded, guest not double counted)", m)
	}
}

// TestCPUReport: CPU seconds per process over the window, ms per ACKed message over the system
// under test only, and a restarted or unreadable process makes the report incomplete.
func TestCPUReport(t *testing.T) {
	procs := []Proc{{"gateway", 1}, {"redis-core", 2}, {"kafka", 3}}
	before := cpuSample{names: procs, procs: []procTimes{{ticks: 100, startTime: 7}, {ticks: 50, startTime: 8}, {ticks: 1000, startTime: 9}},
		self: procTimes{ticks: 10}, machine: machineTimes{busy: 1000, total: 4000}}
	after := cpuSample{names: procs, procs: []procTimes{{ticks: 400, startTime: 7}, {ticks: 150, startTime: 8}, {ticks: 1600, startTime: 9}},
		self: procTimes{ticks: 210}, machine: machineTimes{busy: 2200, total: 6000}}
	rep := cpuReport(before, after, 10, 20000)
	if !rep.Complete || rep.TotalS != 10 || rep.Procs[2].CPUS != 6 || math.Abs(rep.Procs[0].Cores-0.3) > 1e-9 {
		t.Fatalf("report %+v", rep)
	}
	if rep.MsPerMessage != 0.5 || rep.LoadgenS != 2 || rep.MachineBusyCores != 1.2 || rep.MachineIdlePct != 40 {
		t.Fatalf("ms/msg %v loadgen %v busy %v idle %v", rep.MsPerMessage, rep.LoadgenS, rep.MachineBusyCores, rep.MachineIdlePct)
	}
	if rep.Procs[0].SyscallsPerMsg != 0 {
		t.Fatalf("syscalls per message without activity readings: %v", rep.Procs[0].SyscallsPerMsg)
	}
	before.procs[0].activity = activity{syscalls: 1000, switches: 500, ok: true}
	after.procs[0].activity = activity{syscalls: 81000, switches: 40500, ok: true}
	if rep = cpuReport(before, after, 10, 20000); rep.Procs[0].SyscallsPerMsg != 4 || rep.Procs[0].SwitchesPerMsg != 2 {
		t.Fatalf("per message: syscalls %v switches %v, want 4 and 2", rep.Procs[0].SyscallsPerMsg, rep.Procs[0].SwitchesPerMsg)
	}
	after.procs[1].startTime = 99 // pid reused by another process
	after.procs[2] = procTimes{err: errors.New("gone")}
	rep = cpuReport(before, after, 10, 20000)
	if rep.Complete || rep.Procs[1].Error == "" || rep.Procs[2].Error == "" || rep.TotalS != 3 {
		t.Fatalf("incomplete readings not flagged: %+v", rep)
	}
	if rep := cpuReport(cpuSample{}, cpuSample{}, 10, 5); rep.Complete {
		t.Fatal("no processes is not complete evidence")
	}
}

func TestProcField(t *testing.T) {
	io := []byte("rchar: 6976\nwchar: 0\nsyscr: 10\nsyscw: 3\nread_bytes: 8192\n")
	st := []byte("Name:\tqim\nvoluntary_ctxt_switches:\t120\nnonvoluntary_ctxt_switches:\t7\n")
	if procField(io, "syscr:") != 10 || procField(io, "syscw:") != 3 || procField(io, "missing:") != 0 {
		t.Fatal("io fields")
	}
	if procField(st, "voluntary_ctxt_switches:") != 120 || procField(st, "nonvoluntary_ctxt_switches:") != 7 {
		t.Fatal("status fields")
	}
	if a := readActivity(os.Getpid()); !a.ok || a.syscalls == 0 || a.switches == 0 {
		t.Fatalf("own activity %+v", a)
	}
}
