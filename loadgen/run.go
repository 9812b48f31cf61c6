package loadgen

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/qim-dev/qim/chaos/history"
	"github.com/qim-dev/qim/contract"
)

// runState is what every connection of one run shares.
type runState struct {
	cfg      Config
	runID    uint64
	userBase uint64
	rec      *Recorder
	hist     *history.Recorder // Config.History; nil records nothing
	groups   []*lgGroup        // group mode
	mids     *midIndex         // group mode: body-less entries by message_id
	live     Counts            // the counts taken during the run (atomic adds; see Counts)
	probe    probes
	inflight atomic.Int64 // SENDs awaiting an answer (not timed out)
	endNs    atomic.Int64 // end of the measured window, Unix ns
	stopping atomic.Bool  // connections are being closed on purpose
	sendStop chan struct{}
	connCtx  context.Context

	errMu  sync.Mutex
	errs   []string
	nErr   int64
	failMu sync.Mutex
	fails  map[string]int64
}

// probes are counts the run reads while it runs (progress, the settle loop, the group report)
// and that are not themselves in the report's Counts.
type probes struct {
	serverPings, delivered, entriesInWindow atomic.Int64
}

const maxNotedErrors = 20

func newRunState(cfg Config) *runState {
	var b [12]byte
	_, _ = rand.Read(b[:])
	r := &runState{cfg: cfg, runID: binary.BigEndian.Uint64(b[:8]) | 1, sendStop: make(chan struct{}),
		fails: map[string]int64{}, hist: cfg.History}
	// 32 random bits above 20 bits of per-run user numbers: runs on one stack do not collide,
	// and the ids stay far from the small numbers hand-made users get.
	r.userBase = uint64(binary.BigEndian.Uint32(b[8:]))<<20 | 1
	r.endNs.Store(math.MaxInt64)
	return r
}

func (r *runState) windowEnd() time.Time { return time.Unix(0, r.endNs.Load()) }

// installFor is connection idx's install id: client_message_ids are derived from it and the
// per-connection ordinal (contract.DeriveClientMessageID), so they are unique per run.
func (r *runState) installFor(idx int) contract.U128 {
	return contract.U128{Hi: r.runID, Lo: uint64(idx) + 1}
}

func (r *runState) user(i int) contract.UserID { return contract.UserID(r.userBase + uint64(i)) }

// noteError keeps the first few distinct problems for the report (never a body or a token).
func (r *runState) noteError(err error) {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	r.nErr++
	if len(r.errs) < maxNotedErrors {
		r.errs = append(r.errs, err.Error())
	}
}

func (r *runState) countFailure(code string) {
	r.failMu.Lock()
	r.fails[code]++
	r.failMu.Unlock()
}

// Run executes one load run and returns its report. An error means the run could not take
// place (bad config, the gateway refused connections); everything that went wrong DURING the
// run is in the report's counters and verdicts instead, so a failing system yields a report.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Mode == ModeRoom {
		return runRoom(ctx, cfg)
	}
	r := newRunState(cfg)
	frameConns, frameRate := cfg.Connections, cfg.Rate
	sdk := cfg.sdkClients()
	if sdk > 0 && cfg.SDKLane != nil {
		frameConns -= sdk
		frameRate = cfg.Rate * float64(frameConns) / float64(cfg.Connections)
	}
	connCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	r.connCtx = connCtx
	conns, pings, err := r.connect(connCtx, frameConns)
	if err != nil {
		return nil, err
	}
	all := append(append([]*lgConn(nil), conns...), pings...)
	var once sync.Once
	stop := func() {
		once.Do(func() {
			r.stopping.Store(true)
			cancel()
			for _, c := range all {
				c.close()
			}
		})
	}
	defer stop()
	if cfg.Mode == ModeGroup {
		r.groups, conns = r.formGroups(conns)
		if err := r.createGroups(connCtx, r.groups); err != nil {
			return nil, err
		}
	}
	lane := r.startLane(ctx, sdk, frameConns+len(pings))
	ph, err := r.measure(ctx, connCtx, stop, conns, pings, frameRate)
	if err != nil {
		return nil, err
	}
	laneRep := r.finishLane(ctx, lane, sdk)
	return r.report(ph, frameRate, frameConns, laneRep), nil
}

// connect dials every message and control connection with bounded concurrency and, in direct
// mode, pairs the message connections (2k ↔ 2k+1); group mode forms its groups afterwards.
func (r *runState) connect(ctx context.Context, n int) ([]*lgConn, []*lgConn, error) {
	total := n + r.cfg.PingConnections
	out := make([]*lgConn, total)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.cfg.DialConcurrency)
	for i := range total {
		g.Go(func() error {
			c, err := dial(gctx, r, i, r.user(i))
			out[i] = c
			return err
		})
	}
	if err := g.Wait(); err != nil {
		for _, c := range out {
			if c != nil {
				c.close()
			}
		}
		return nil, nil, err
	}
	conns, pings := out[:n], out[n:]
	for i := 0; r.cfg.Mode == ModeDirect && i < n; i += 2 {
		a, b := conns[i], conns[i+1]
		ab, ba := &flow{}, &flow{}
		pair := &pairConv{}
		a.role = &directSide{peer: b, out: ab, in: ba, pair: pair}
		b.role = &directSide{peer: a, out: ba, in: ab, pair: pair}
	}
	for _, c := range conns {
		c.jobs = make(chan time.Time, r.cfg.QueuePerConn)
		c.permits = make(chan struct{}, r.cfg.InflightPerConn)
		c.pullNeeded = make(chan struct{}, 1)
		c.batches = make(chan pullAnswer, 1)
		c.stored = make(chan pullAnswer, 1)
	}
	return conns, pings, nil
}

// phases are the timestamps and samples the report is built from.
type phases struct {
	start, end   time.Time
	sched        ScheduleResult
	cpuBefore    cpuSample
	cpuAfter     cpuSample
	settle       SettleReport
	conns, pings []*lgConn
}

// measure runs the window: goroutines up, CPU sample, the schedule, CPU sample, drain, settle.
func (r *runState) measure(ctx, connCtx context.Context, stop func(), conns, pings []*lgConn, rate float64) (*phases, error) {
	ph := &phases{conns: conns, pings: pings}
	var wg, senders sync.WaitGroup
	defer func() { stop(); wg.Wait() }() // every connection goroutine ends before the report is built
	ph.cpuBefore = sampleCPU(r.cfg.CPU)
	ph.start = time.Now()
	r.rec = NewRecorder(ph.start)
	r.endNs.Store(ph.start.Add(r.cfg.Duration).UnixNano())
	for _, c := range conns {
		wg.Add(3)
		senders.Add(1)
		go func() { defer wg.Done(); c.supervise(connCtx) }()
		go func() { defer senders.Done(); defer c.sendDone.Store(true); c.sendLoop(connCtx) }()
		go func() { defer wg.Done(); c.pullLoop(connCtx) }()
		go func() { defer wg.Done(); c.maintain(connCtx, true) }()
	}
	for _, c := range pings {
		wg.Add(2)
		go func() { defer wg.Done(); c.supervise(connCtx) }()
		go func() { defer wg.Done(); c.pingLoop(connCtx) }()
	}
	progDone := make(chan struct{})
	var progWG sync.WaitGroup
	progWG.Add(1)
	go func() { defer progWG.Done(); r.progressLoop(ph, progDone) }()

	sched := Scheduler{Rate: rate, Duration: r.cfg.Duration, Sinks: len(conns)}
	ph.sched = sched.Run(ctx, ph.start, func(sink int, _ int64, due time.Time) bool { return conns[sink].offer(due) })
	ph.end = time.Now()
	ph.cpuAfter = sampleCPU(r.cfg.CPU)
	close(r.sendStop)
	r.waitSenders(&senders, conns)
	for _, c := range conns {
		atomic.AddInt64(&r.live.Unsent, int64(len(c.jobs))) // scheduled, queued, never sent
	}
	atomic.AddInt64(&r.live.Unsent, ph.sched.Rejected)
	r.awaitAnswers(ctx, ph.end)
	ph.settle = r.settle(ctx, conns)
	if r.hist != nil {
		r.drainForHistory(ctx, conns)
		r.readStored(ctx, conns)
	}
	close(progDone)
	progWG.Wait()
	if now := time.Now(); r.rec.Open(now) >= time.Second {
		// The tail since the last window, unless it is under a second: rates over a sliver
		// are noise (its samples are in the whole-run histograms either way).
		r.rec.Roll(now, ph.start, r.gauges(conns, "drain"))
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("loadgen: run interrupted: %w", err)
	}
	return ph, nil
}

// waitSenders waits for every sendLoop to return. One still blocked in a write AckTimeout after
// the window (the gateway stopped reading its socket and never resumed) is cut loose with a
// write deadline and noted: a stuck system must end the run with a failing report, not hang it.
func (r *runState) waitSenders(wg *sync.WaitGroup, conns []*lgConn) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return
	case <-time.After(r.cfg.AckTimeout):
	}
	for _, c := range conns {
		if !c.sendDone.Load() {
			r.noteError(fmt.Errorf("loadgen: connection %d: SEND write still blocked %s after the window", c.idx, r.cfg.AckTimeout))
			atomic.AddInt64(&r.live.ConnectionsLost, 1)
			if l := c.current(); l != nil {
				_ = l.nc.SetWriteDeadline(time.Now())
			}
		}
	}
	<-done
}

// awaitAnswers waits for every SEND in flight to be answered or timed out (the sweepers time
// them out after AckTimeout, so this is bounded).
func (r *runState) awaitAnswers(ctx context.Context, end time.Time) {
	deadline := end.Add(r.cfg.AckTimeout + 2*time.Second)
	for r.inflight.Load() > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
}

func (r *runState) gauges(conns []*lgConn, phase string) Gauges {
	g := Gauges{Inflight: r.inflight.Load(), Phase: phase}
	for _, c := range conns {
		g.Queued += int64(len(c.jobs))
	}
	return g
}

// progressLoop closes a window every Window and prints the progress line.
func (r *runState) progressLoop(ph *phases, done <-chan struct{}) {
	t := time.NewTicker(r.cfg.Window)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			phase := "run"
			if now.After(ph.start.Add(r.cfg.Duration + r.cfg.Window/2)) {
				phase = "drain"
			}
			w := r.rec.Roll(now, ph.start, r.gauges(ph.conns, phase))
			if r.cfg.Progress != nil {
				fmt.Fprintln(r.cfg.Progress, progressLine(w, atomic.LoadInt64(&r.live.Unsent), r.cfg.Mode))
			}
		}
	}
}

// progressLine is one window's line; in group mode the delivery rate is in mailbox entries.
func progressLine(w Window, unsent int64, mode Mode) string {
	s := w.Segments
	delivered := "delivered"
	if mode == ModeGroup {
		delivered = "entries"
	}
	return fmt.Sprintf("loadgen %5.0fs %-5s sent %6.1f/s acked %6.1f/s %s %6.1f/s | p99 ack %7.1f ms  p99 e2e %7.1f ms  p99 lag %6.1f ms | queued %d in-flight %d unsent %d",
		w.EndS, w.Phase, w.SendRate, w.AckRate, delivered, w.DeliverRate, s[SegSendAck.String()].P99Ms, s[SegEndToEnd.String()].P99Ms,
		s[SegGenLag.String()].P99Ms, w.Queued, w.Inflight, unsent)
}
