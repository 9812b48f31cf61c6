package gates

import (
	"runtime"
	"strconv"

	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/gates/svc"
)

// serviceGoMaxProcs is the GOMAXPROCS every service process of the deployment runs with, 0 for
// none (Go's default: every core). setting is Env.GoMaxProcs: N > 0 is N, a negative one is Go's
// default, and 0 sizes each process to its share of the machine, cpus ÷ procs (at least 1),
// unless the services run as one process, which gets every core.
//
// Why a share: on the project's 2-core machine, five service runtimes that may each run two
// threads wake spare threads to steal work that one would have done, and those wake-ups are
// what a message costs here (docs/adr/0024-harness-sized-for-a-small-box.md, measured in
// docs/perf.md: GOMAXPROCS=1 lowered end-to-end p99 at 700 msg/s from 246–264 to 163–179 ms).
func serviceGoMaxProcs(setting, cpus, procs int, oneProcess bool) int {
	switch {
	case setting > 0:
		return setting
	case setting < 0 || oneProcess || procs <= 0:
		return 0
	}
	return max(1, cpus/procs)
}

// goMaxProcsEnv is the services' extra environment for n (none for 0).
func goMaxProcsEnv(n int) []string {
	if n <= 0 {
		return nil
	}
	return []string{"GOMAXPROCS=" + strconv.Itoa(n)}
}

// DeployedGoMaxProcs is serviceGoMaxProcs for env's deployment of procs service processes on
// this machine.
func DeployedGoMaxProcs(env *Env, procs int) int {
	return serviceGoMaxProcs(env.GoMaxProcs, runtime.NumCPU(), procs, env.OneProcess)
}

// ServiceProcs counts the service processes of a split deployment on ep of instances of each
// scaled service: svc.Order with the extra instances, and the HistoryArchiver with a CQL node.
func ServiceProcs(ep stack.Endpoints, instances int) int {
	n := len(svc.Order) + len(svc.Scaled)*(max(instances, 1)-1)
	if ep.CQL != "" {
		n++
	}
	return n
}

// instances is Env.Instances with 0 read as 1.
func (e *Env) NumInstances() int { return max(e.Instances, 1) }
