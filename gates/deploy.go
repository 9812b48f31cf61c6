package gates

import (
	"context"
	"fmt"
	"io"
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
	set, err := svc.New(bin, ep)
	if err != nil {
		l.err = err
		return nil, err
	}
	start := time.Now()
	if err := set.MigrateArchive(ctx); err != nil {
		l.err = err
		return nil, err
	}
	for _, name := range set.Services() {
		t := time.Now()
		if err := set.Start(ctx, name); err != nil {
			_ = set.StopAll()
			l.err = fmt.Errorf("gates: start %s: %w", name, err)
			return nil, l.err
		}
		l.env.Progressf("%s healthy in %s", name, time.Since(t).Round(time.Millisecond))
	}
	l.started = time.Since(start)
	l.set = set
	return set, nil
}

func (l *lazyDeployment) stop(progress io.Writer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.set == nil {
		return
	}
	if err := l.set.StopAll(); err != nil {
		fmt.Fprintf(progress, "services stop: %v\n", err)
	}
}
