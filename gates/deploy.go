package gates

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"
	"time"

	"github.com/qim-dev/qim/gates/svc"
)

// lazyDeployment builds the qim binary and starts every service on the run's stack the first
// time a gate needs them; later gates reuse the same deployment, and the run stops it before the
// stack goes down.
type lazyDeployment struct {
	mu      sync.Mutex
	env     *Env
	set     *svc.Set
	err     error
	started time.Duration
}

func (l *lazyDeployment) get(ctx context.Context) (*svc.Set, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.set != nil || l.err != nil {
		return l.set, l.err
	}
	st, err := l.env.Stack(ctx)
	if err != nil {
		l.err = err
		return nil, err
	}
	ep := st.Endpoints()
	root := l.env.SUTRoot
	if root == "" {
		root = l.env.Root
	}
	if root != l.env.Root {
		l.env.Progressf("building qim from %s (the build under test)", root)
	} else {
		l.env.Progressf("building qim")
	}
	bin, err := svc.Build(ctx, root, ep.Dir)
	if err != nil {
		l.err = err
		return nil, err
	}
	procs := ServiceProcs(ep, l.env.NumInstances())
	n := DeployedGoMaxProcs(l.env, procs)
	if n > 0 {
		l.env.Progressf("services run with GOMAXPROCS=%d (%d cores, %d service processes)", n, runtime.NumCPU(), procs)
	}
	set, err := svc.NewInstances(bin, ep, l.env.NumInstances(), goMaxProcsEnv(n)...)
	if err != nil {
		l.err = err
		return nil, err
	}
	start := time.Now()
	if err := set.MigrateArchive(ctx); err != nil {
		l.err = err
		return nil, err
	}
	if err := l.startServices(ctx, set); err != nil {
		_ = set.Close()
		l.err = err
		return nil, err
	}
	l.started = time.Since(start)
	l.set = set
	return set, nil
}

// startServices starts the deployment: a process per service, or all but the HistoryArchiver in
// one (Env.OneProcess).
func (l *lazyDeployment) startServices(ctx context.Context, set *svc.Set) error {
	if l.env.OneProcess {
		t := time.Now()
		if err := set.StartOneProcess(ctx); err != nil {
			return fmt.Errorf("gates: start the services as one process: %w", err)
		}
		l.env.Progressf("every service healthy in %s, in one process (qim all)", time.Since(t).Round(time.Millisecond))
		return nil
	}
	for _, name := range set.Services() {
		t := time.Now()
		if err := set.Start(ctx, name); err != nil {
			return fmt.Errorf("gates: start %s: %w", name, err)
		}
		l.env.Progressf("%s healthy in %s", name, time.Since(t).Round(time.Millisecond))
	}
	return nil
}

func (l *lazyDeployment) stop(progress io.Writer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.set == nil {
		return
	}
	if err := l.set.Close(); err != nil {
		fmt.Fprintf(progress, "services stop: %v\n", err)
	}
}
