package chaos

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/qim-dev/qim/gates/svc"
	"github.com/qim-dev/qim/loadgen"
)

// writerPartitionCell (issue 42, item 2) runs two ConversationWriters and cuts the first off
// from redis-core, both ways, past its writer_id lease, while the gateways still reach it. The
// isolated writer cannot renew its lease, so it must fence itself (stop issuing, exit with
// ErrLeaseLost) by its local deadline, which falls before the lease key can expire in Redis
// and let another writer claim its writer_id; once its streams end, the gateways move its
// conversations to the other writer. The checker finds any conversation_seq or message_id
// issued twice (REUSED); the watch requires the fence within the lease and the sends to go on
// after it; the heal requires the fence, then starts the writer again.
//
// Until the fence, the isolated writer's conversations wait (their sends end unknown): the
// gateways fall back only on a stream's end (ADR-0026). The cell states that bound rather than
// hide it; a writer that fenced itself sooner would shorten it.
func writerPartitionCell() Cell {
	isolated := svc.InstanceName(svc.Writer, 1)
	link := Link{Name: isolated + "→redis-core", Process: isolated, Var: "QIM_REDIS_ADDR"}
	blackhole := shapeToxics("blackhole")
	return Cell{Name: "net-writer-partitioned-past-lease", Class: "partition",
		Title:     "two ConversationWriters: one cut off from redis-core (not from the gateways) past its lease; it must fence itself",
		Nightly:   true,
		Instances: 2, Links: []Link{link}, Fault: shapeLink(link.Name, blackhole...), Hold: pausePastLease,
		Heal: healFenced(link.Name, isolated), Window: pausePastLease + netSettle + 10*time.Second,
		Watch: func() Watch {
			return &partitionWatch{isolated: isolated, takeoverWatch: takeoverWatch{survivor: svc.InstanceName(svc.Writer, 2)}}
		}}
}

// healFenced removes a partition and requires that name fenced itself during it (its process
// ended on its own), then starts it again.
func healFenced(link, name string) Heal {
	return func(ctx context.Context, t *Target) error {
		if err := t.Net.clear(ctx, link); err != nil {
			return err
		}
		exited, err := t.Set.WaitExit(name, fenceWithin)
		if !exited {
			_ = t.Set.Signal(name, syscall.SIGQUIT) // a goroutine dump in its log shows where it hangs
			return fmt.Errorf("%w: %s still running %s after the partition healed (it must fence itself while cut off past its lease)",
				ErrFaultMissed, name, fenceWithin)
		}
		t.logf("%s fenced itself during the partition (%v)", name, err)
		return t.Set.Start(ctx, name)
	}
}

// fenceSlack is how long after its lease's TTL the isolated writer's process may take to end:
// its lease is lost at the TTL, and closing its clients waits out their own timeouts.
const fenceSlack = 15 * time.Second

// partitionWatch is takeoverWatch plus the moment the isolated writer's process ended.
type partitionWatch struct {
	takeoverWatch
	isolated string

	mu      sync.Mutex
	fenceAt time.Time
}

func (w *partitionWatch) start(ctx context.Context, t *Target) {
	w.t = t
	ctx, w.cancel = context.WithCancel(ctx)
	w.done = sampleLoop(ctx, takeoverSampleEvery, func(ctx context.Context) {
		w.sample(ctx)
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.fenceAt.IsZero() && !t.Set.Running(w.isolated) {
			w.fenceAt = time.Now()
		}
	})
}

// judge: the isolated writer fenced itself within its lease's TTL of the partition (plus the
// time its process takes to end), the survivor committed during the partition, and the sends
// offered after the fence were acknowledged: its conversations moved.
func (w *partitionWatch) judge(_ context.Context, res *CellResult, fr *faultRun, rep *loadgen.Report) {
	w.cancel()
	<-w.done
	w.mu.Lock()
	fenceAt := w.fenceAt
	w.mu.Unlock()
	w.takeoverWatch.mu.Lock()
	samples := w.samples
	w.takeoverWatch.mu.Unlock()
	fenced := !fenceAt.IsZero() && fenceAt.After(fr.faultAt) && fenceAt.Sub(fr.faultAt) <= writerLeaseTTL+fenceSlack
	res.check("the isolated writer fenced itself within its lease", fenced, "%s ended %.1f s after the partition began (lease TTL %v + %v to exit)",
		w.isolated, fenceAt.Sub(fr.faultAt).Seconds(), writerLeaseTTL, fenceSlack)
	atFault, atHeal, ok := commitsAround(samples, fr.faultAt, fr.healAt)
	res.check("the other writer committed during the partition", ok && atHeal > atFault,
		"%s: %.0f commits at the partition, %.0f at the heal (%d samples)", w.survivor, atFault, atHeal, len(samples))
	if !fenced {
		return
	}
	end := rep.StartedAt.Add(time.Duration(res.WindowS * float64(time.Second)))
	windows, sent, acked := sendsBetween(rep, fenceAt.Add(time.Second), end)
	res.check("sends go on after the fence", windows >= 5 && sent > 0 && float64(acked) >= sendsGoOnShare*float64(sent),
		"%d load windows after the fence: %d sent, %d acknowledged (must be ≥ %.0f %%)", windows, sent, acked, sendsGoOnShare*100)
}
