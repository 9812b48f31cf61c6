package chaos

import (
	"context"
	"sync"
	"time"

	"github.com/qim-dev/qim/gates/svc"
	"github.com/qim-dev/qim/loadgen"
)

// writerDownHold is how long the killed writer instance stays down: long enough for ten load
// windows carried by the other instance alone.
const writerDownHold = 15 * time.Second

// writerTakeoverCell runs two ConversationWriters and kills one for writerDownHold. The gateway
// routes each conversation to the reachable writer with the highest rendezvous score, so about
// half the load's conversations lived on the killed one; they must move to the survivor at once
// (fallback on the stream's EOF, ADR-0026), commit there with their conversation_seq continuing
// in core Redis, and the history checker must find nothing lost, duplicated or reused.
func writerTakeoverCell() Cell {
	return Cell{Name: "writer-instance-kill-others-carry",
		Title:     "two ConversationWriters: SIGKILL one and keep it down 15 s; the other commits its conversations",
		Instances: 2, Fault: killService(svc.Writer), Hold: writerDownHold, Heal: restartService(svc.Writer),
		Watch: func() Watch { return &takeoverWatch{survivor: svc.InstanceName(svc.Writer, 2)} }}
}

// takeoverWatch samples the surviving writer's commit count so the judge can tell "the
// survivor carried the load while the other was down" from "sends waited for the restart".
type takeoverWatch struct {
	survivor string

	t      *Target
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	samples []commitSample
	lastErr error
}

type commitSample struct {
	at      time.Time
	commits float64
}

const takeoverSampleEvery = 250 * time.Millisecond

func (w *takeoverWatch) start(ctx context.Context, t *Target) {
	w.t = t
	ctx, w.cancel = context.WithCancel(ctx)
	w.done = sampleLoop(ctx, takeoverSampleEvery, w.sample)
}

func (w *takeoverWatch) sample(ctx context.Context) {
	v, err := w.t.Set.Metric(ctx, w.survivor, "qim_writer_commits_total")
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil {
		w.samples = append(w.samples, commitSample{at: time.Now(), commits: v})
	} else if ctx.Err() == nil {
		w.lastErr = err
	}
}

// judge: the sends offered while one writer was down were acknowledged (the other instance
// took its conversations, not a retry after the restart), and the survivor's commits moved in
// that window.
func (w *takeoverWatch) judge(_ context.Context, res *CellResult, fr *faultRun, rep *loadgen.Report) {
	w.cancel()
	<-w.done
	w.mu.Lock()
	samples, lastErr := w.samples, w.lastErr
	w.mu.Unlock()
	judgeSendsGoOn(res, rep, fr)
	atFault, atHeal, ok := commitsAround(samples, fr.faultAt, fr.healAt)
	res.check("the surviving writer committed while the other was down", ok && atHeal > atFault,
		"%s: %.0f commits at the fault, %.0f at the heal (%d samples, last scrape error: %v)",
		w.survivor, atFault, atHeal, len(samples), lastErr)
}

// commitsAround is the last sample at or before from and the last at or before to.
func commitsAround(samples []commitSample, from, to time.Time) (atFrom, atTo float64, ok bool) {
	var seenFrom, seenTo bool
	for _, s := range samples {
		if !s.at.After(from) {
			atFrom, seenFrom = s.commits, true
		}
		if !s.at.After(to) {
			atTo, seenTo = s.commits, true
		}
	}
	return atFrom, atTo, seenFrom && seenTo
}
