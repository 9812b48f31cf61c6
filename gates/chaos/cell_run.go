package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qim-dev/qim/chaos/check"
	"github.com/qim-dev/qim/chaos/history"
	"github.com/qim-dev/qim/gates/svc"
	"github.com/qim-dev/qim/loadgen"
	"github.com/qim-dev/qim/loadgen/sdklane"
)

// faultRun is what the fault goroutine of a cell observed.
type faultRun struct {
	faultAt, healAt time.Time
	err             error
	restarts        []string // the supervisor's restarts (supervise.go)
}

// runCell runs one cell on a fresh deployment and judges it. Errors that stop the cell are in
// the result (it fails); the matrix goes on with the next cell.
func (m *matrix) runCell(ctx context.Context, c Cell) *CellResult {
	res := &CellResult{Name: c.Name, Title: c.Title, Class: c.class(), Quick: c.Quick, Pass: m.pass}
	start := time.Now()
	defer func() { res.finish(start) }()
	set, err := m.deploy(ctx, c)
	if set != nil {
		defer m.teardown(set, res)
	}
	if err != nil {
		res.fail("deploy", err)
		return res
	}
	var watch Watch
	if c.Watch != nil {
		watch = c.Watch()
		watch.start(ctx, &Target{Stack: m.opts.Stack, Faults: m.faults, Set: set, Net: m.net, logf: m.logf})
	}
	from, err := m.outboxEnd(ctx)
	if err != nil {
		res.fail("outbox position", err)
		return res
	}
	rec := history.NewRecorder()
	window := c.Window
	if window == 0 {
		window = m.opts.Window
	}
	rep, fr, err := m.load(ctx, c, set, rec, window)
	if err != nil {
		res.fail("load", err)
		return res
	}
	res.record(rep, fr)
	res.WindowS = window.Seconds()
	if !m.judgeFault(res, c, rep, fr, window) {
		return res
	}
	if c.RoomSize > 0 {
		judgeRooms(res, rep, fr)
		m.judgeInvariants(ctx, res, set)
		return res
	}
	events := rec.Events()
	m.saveHistory(res, events)
	m.judgeHistory(res, events, fr)
	to := m.judgeAudit(ctx, res, from)
	m.judgeArchive(ctx, res, set, from, to)
	if watch != nil {
		watch.judge(ctx, res, fr, rep)
	}
	m.judgeInvariants(ctx, res, set)
	return res
}

// deploy starts every service on the matrix's stack, the cell's target with its failpoint armed
// but dormant.
func (m *matrix) deploy(ctx context.Context, c Cell) (*svc.Set, error) {
	set, err := svc.NewInstances(m.opts.Bin, m.opts.Stack.Endpoints(), max(c.Instances, 1))
	if err != nil {
		return nil, err
	}
	m.logFrom = map[string]int64{} // the services' logs are appended across cells
	for _, name := range set.Services() {
		if st, err := os.Stat(set.LogPath(name)); err == nil {
			m.logFrom[name] = st.Size()
		}
	}
	if err := set.MigrateArchive(ctx); err != nil {
		return set, err
	}
	if m.net, err = startLinks(set, c.Links); err != nil {
		return set, err
	}
	if m.clientGateway = ""; c.ClientLink {
		if m.net == nil {
			m.net = newNetLinks()
		}
		if m.clientGateway, err = m.net.proxy(linkClients, set.Addrs.GatewayTCP); err != nil {
			return set, err
		}
	}
	for _, name := range set.Services() {
		env := slices.Clone(c.Env[name]) // the cell's own list never grows
		if name == c.Service && c.Failpoint != "" {
			env = append(env, "QIM_FAILPOINT="+c.Failpoint, "QIM_FAILPOINT_ARM=signal")
		}
		if err := set.Start(ctx, name, env...); err != nil {
			return set, err
		}
	}
	return set, nil
}

// load runs the cell's load with the fault goroutine beside it.
func (m *matrix) load(ctx context.Context, c Cell, set *svc.Set, rec *history.Recorder, window time.Duration) (*loadgen.Report, *faultRun, error) {
	cfg := loadgen.Config{
		Gateway: set.Addrs.GatewayTCP, MoreGateways: set.GatewayTCPs()[1:], TokenSecret: []byte(set.Addrs.TokenSecret),
		Rate: m.opts.Rate, Duration: window, Connections: m.opts.Connections, PingConnections: 1,
		SDKClientsPercent: m.opts.SDKPercent, SDKLane: sdklane.New(), History: rec, Reconnect: true,
		Window: time.Second, SettleTimeout: m.opts.Settle, SettleIdle: 20 * time.Second, Label: "chaos " + c.Name,
	}
	if c.ClientLink {
		cfg.Gateway, cfg.MoreGateways = m.clientGateway, nil
	}
	if c.SDKPercent > 0 {
		cfg.SDKClientsPercent = c.SDKPercent
	}
	if c.GroupSize > 0 {
		// The same mailbox-entry rate as a 1:1 cell (two entries per message there), so the
		// fault meets the same pressure; the SDK lane drives 1:1 pairs only.
		cfg.Mode, cfg.GroupSize, cfg.SDKClientsPercent, cfg.SDKLane = loadgen.ModeGroup, c.GroupSize, 0, nil
		cfg.Rate = m.cellRate(c)
	}
	if c.RoomSize > 0 {
		roomLoad(&cfg, c, m.cellRate(c))
	}
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fr := &faultRun{}
	done := make(chan struct{})
	t := &Target{Stack: m.opts.Stack, Faults: m.faults, Set: set, Net: m.net, logf: m.logf}
	sup := &supervisor{set: set, t0: time.Now(), logf: m.logf}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); sup.run(fctx) }()
	go func() {
		defer close(done)
		m.inject(fctx, c, t, fr, &sup.open)
	}()
	rep, err := loadgen.Run(ctx, cfg)
	<-done // the heal is bounded (healthyWithin), so the cell never ends with a fault open
	cancel()
	wg.Wait()
	fr.restarts = sup.restarts()
	return rep, fr, err
}

// inject waits for FaultAt, breaks, holds, heals.
func (m *matrix) inject(ctx context.Context, c Cell, t *Target, fr *faultRun, open *atomic.Bool) {
	select {
	case <-time.After(m.opts.FaultAt):
	case <-ctx.Done():
		fr.err = ctx.Err()
		return
	}
	m.logf("%s: injecting: %s", c.Name, c.Title)
	open.Store(true)
	defer open.Store(false)
	fr.faultAt, fr.err = c.Fault(ctx, t)
	if fr.err != nil {
		// Heal anyway: a half-done fault (a broker paused, then a service that would not stop)
		// must not leave the stack broken for the next cell.
		if herr := c.Heal(ctx, t); herr != nil {
			m.logf("%s: heal after a failed fault: %v", c.Name, firstLine(herr))
		}
		return
	}
	if c.Hold > 0 {
		m.logf("%s: holding the fault for %s", c.Name, c.Hold)
		select {
		case <-time.After(c.Hold):
		case <-ctx.Done():
		}
	}
	if fr.err = c.Heal(ctx, t); fr.err == nil {
		fr.healAt = time.Now()
		m.logf("%s: healed %.1fs after the fault", c.Name, fr.healAt.Sub(fr.faultAt).Seconds())
	}
}

// judgeFault requires that the fault happened inside the window, was healed, and that load
// before it reached the floor (a cell without a baseline proves nothing).
func (m *matrix) judgeFault(res *CellResult, c Cell, rep *loadgen.Report, fr *faultRun, window time.Duration) bool {
	if fr.err != nil {
		res.check("fault injected and healed", false, "%v", fr.err)
		return false
	}
	inWindow := fr.faultAt.Before(rep.StartedAt.Add(window))
	res.check("fault injected and healed", inWindow, "fault at %.1fs, healed at %.1fs of a %s window",
		res.FaultS, res.HealS, window)
	floor := int64(m.cellRate(c) * m.frameShare(c) * m.opts.FaultAt.Seconds() * floorShare)
	before := acksBefore(rep, fr.faultAt)
	res.check("load before the fault", before >= floor, "%d sends acknowledged before the fault (floor %d)", before, floor)
	return inWindow && before >= floor
}

// cellRate is the offered message rate of cell c: the matrix's rate, or for a group cell the
// rate that offers the same mailbox entries per second (a 1:1 message makes two entries), and
// for a room cell the event rate that offers as many deliveries.
func (m *matrix) cellRate(c Cell) float64 {
	if c.GroupSize > 0 {
		return m.opts.Rate * 2 / float64(c.GroupSize)
	}
	if c.RoomSize > 0 { // events whose deliveries match a 1:1 cell's mailbox entries
		return m.opts.Rate * 2 / float64(c.RoomSize)
	}
	return m.opts.Rate
}

// frameShare is the frame lane's share of cell c's offered rate: the timeline the floor is
// judged on counts that lane's acknowledgements only (the SDK lane keeps its own ledger).
func (m *matrix) frameShare(c Cell) float64 {
	if c.GroupSize > 0 || c.RoomSize > 0 {
		return 1 // the SDK lane drives 1:1 pairs only
	}
	pct := m.opts.SDKPercent
	if c.SDKPercent > 0 {
		pct = c.SDKPercent
	}
	return 1 - float64(pct)/100
}

// floorShare is the share of the offered load that must be acknowledged before the fault.
const floorShare = 0.5

// acksBefore sums the timeline's acknowledgements in the windows that ended before t.
func acksBefore(rep *loadgen.Report, t time.Time) int64 {
	var n int64
	cut := t.Sub(rep.StartedAt).Seconds()
	for _, w := range rep.Timeline {
		if w.EndS <= cut {
			n += w.Acked
		}
	}
	return n
}

func (m *matrix) saveHistory(res *CellResult, events []history.Event) {
	path := filepath.Join(m.dir, res.stem(m.opts.Repeat > 1)+".history.log.zst")
	if err := history.WriteFile(path, events); err != nil {
		res.check("history saved", false, "%v", err)
		return
	}
	res.History = filepath.Base(path)
	res.Events = len(events)
}

// judgeHistory runs the checker over the cell's history.
func (m *matrix) judgeHistory(res *CellResult, events []history.Event, fr *faultRun) {
	cr, err := check.Check(events, check.Options{FaultUs: fr.faultAt.UnixMicro(), HealUs: fr.healAt.UnixMicro(),
		StallAfter: m.opts.StallAfter, EndUs: time.Now().UnixMicro()})
	if err != nil {
		res.check("history checker", false, "%v", err)
		return
	}
	res.Checker = cr
	res.RecoveryAckMs, res.DrainMs = cr.RecoveryAckMs, cr.DrainMs
	res.check("history checker", cr.Passed, "%s", cr.Summary())
}

func (m *matrix) judgeInvariants(ctx context.Context, res *CellResult, set *svc.Set) {
	if m.opts.Invariants == nil {
		res.check("invariants", false, "no invariants judge was wired")
		return
	}
	ok, detail := m.opts.Invariants(ctx, set)
	res.check("invariants", ok, "%s", detail)
}

// teardown stops the cell's services and makes sure the stack is whole for the next cell.
func (m *matrix) teardown(set *svc.Set, res *CellResult) {
	if err := set.Close(); err != nil {
		m.logf("%s: stopping services: %v", res.Name, err)
	}
	m.net.stop()
	m.net = nil
	res.Logs = m.keepLogs(set, res.stem(m.opts.Repeat > 1))
	if err := m.opts.Stack.Check(context.Background()); err != nil {
		res.check("stack whole after the cell", false, "%v", firstLine(err))
		m.broken = fmt.Errorf("stack broken by cell %s: %w", res.Name, err)
	}
}

// keepLogs copies the cell's service logs into the report directory (the stack directory is
// removed with the stack): a failed cell is diagnosed from them.
func (m *matrix) keepLogs(set *svc.Set, stem string) string {
	dir := filepath.Join(m.dir, stem+".logs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ""
	}
	for _, name := range set.Services() {
		b, err := os.ReadFile(set.LogPath(name))
		if err != nil {
			continue
		}
		if from := m.logFrom[name]; from <= int64(len(b)) {
			b = b[from:] // this cell's part only
		}
		_ = os.WriteFile(filepath.Join(dir, name+".log"), b, 0o644)
	}
	return filepath.Base(dir)
}
