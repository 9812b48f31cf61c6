package loadgen

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

// roomSettleIdle ends the wait for trailing broadcasts after the window once nothing arrived
// for this long: a broadcast that has not arrived a second after the others is lost.
const roomSettleIdle = time.Second

// runRoom is Run in ModeRoom.
func runRoom(ctx context.Context, cfg Config) (*Report, error) {
	rr := &roomRun{r: newRunState(cfg)}
	if err := rr.setupRooms(ctx); err != nil {
		return nil, err
	}
	defer func() {
		rr.r.stopping.Store(true)
		rr.closeAll()
	}()
	start := time.Now()
	rr.start, rr.byPublishSecond = start, newSecondBuckets(start, cfg.Duration+cfg.SettleTimeout)
	rec := NewRecorder(start)
	rr.r.rec = rec
	var wg sync.WaitGroup
	for _, m := range rr.members {
		go rr.read(m, rec)
	}
	pctx, stopPings := context.WithCancel(ctx)
	defer stopPings()
	go rr.ping(pctx)
	for _, m := range rr.senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rr.send(ctx, m, rec)
		}()
	}
	ph := rr.measure(ctx, rec, start)
	for _, m := range rr.senders {
		close(m.jobs)
	}
	wg.Wait()
	rr.settle(ctx)
	ph.settled = time.Now()
	return rr.report(ph, rec), nil
}

// roomPhases are the times and CPU samples of a room run.
type roomPhases struct {
	start, end, settled time.Time
	cpuBefore, cpuAfter cpuSample
	sched               ScheduleResult
}

// measure runs the arrival schedule over the window, rolling the recorder's windows.
func (rr *roomRun) measure(ctx context.Context, rec *Recorder, start time.Time) roomPhases {
	cfg := &rr.r.cfg
	ph := roomPhases{start: start, cpuBefore: sampleCPU(cfg.CPU)}
	rr.r.endNs.Store(start.Add(cfg.Duration).UnixNano())
	done := make(chan struct{})
	go rr.roll(rec, start, done)
	sched := Scheduler{Rate: cfg.Rate, Duration: cfg.Duration, Sinks: len(rr.senders)}
	ph.sched = sched.Run(ctx, start, func(sink int, _ int64, intended time.Time) bool {
		m := rr.senders[sink]
		select {
		case m.jobs <- intended:
			return true
		default:
			rr.unsent.Add(1)
			return false
		}
	})
	if wait := time.Until(start.Add(cfg.Duration)); wait > 0 {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
	}
	ph.end = time.Now()
	ph.cpuAfter = sampleCPU(cfg.CPU)
	close(done)
	return ph
}

// roll closes a recorder window every Config.Window and prints the progress line.
func (rr *roomRun) roll(rec *Recorder, start time.Time, done <-chan struct{}) {
	t := time.NewTicker(rr.r.cfg.Window)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			w := rec.Roll(now, start, Gauges{Phase: "run"})
			if p := rr.r.cfg.Progress; p != nil {
				b := w.Segments[SegBroadcast.String()]
				fmt.Fprintf(p, "  … room load %4.0fs: %d published, %d delivered, broadcast p99 %.1f ms, %d slow-consumer drops\n",
					now.Sub(start).Seconds(), rr.sent.Load(), rr.delivered.Load(), b.P99Ms, rr.slow.Load())
			}
		}
	}
}

// send is one publishing member: each scheduled arrival becomes one SEND to its room, with the
// publish time in the body (the broadcast latency's start).
func (rr *roomRun) send(ctx context.Context, m *roomMember, rec *Recorder) {
	body := make([]byte, rr.r.cfg.BodyBytes)
	install := rr.r.installFor(m.idx)
	for intended := range m.jobs {
		now := time.Now()
		rec.Record(SegGenLag, now.Sub(intended).Microseconds())
		putBody(body, bodyHeader{run: rr.r.runID, sentUs: now.UnixMicro(), sender: uint32(m.idx), ordinal: m.ord})
		cmid := contract.DeriveClientMessageID(install, m.ord)
		m.ord++
		cb := contract.U128(cmid).Bytes()
		payload, err := proto.Marshal(&qimv1.SendRequest{ClientMessageId: cb[:], Target: &qimv1.SendRequest_RoomId{RoomId: rr.roomIDs[m.room]},
			MessageType: uint32(contract.MessageText), Body: body})
		if err != nil {
			rr.r.noteError(err)
			continue
		}
		id := m.nextID.Add(1) + 1 // 1 was the JOIN_ROOM
		m.mu.Lock()
		m.pending[id] = now.UnixMicro()
		m.mu.Unlock()
		if err := m.l.w.Send(ctx, wire.Message{Opcode: contract.OpSend, RequestID: id, Payload: payload}); err != nil {
			rr.r.noteError(err)
			continue
		}
		rec.CountSent()
		rr.sent.Add(1)
		if !now.After(rr.r.windowEnd()) {
			rr.sentInWindow.Add(1)
		}
	}
}

// ping keeps every member's connection inside its heartbeat: each is pinged at half its
// interval, spread over the interval.
func (rr *roomRun) ping(ctx context.Context) {
	payload, err := proto.Marshal(&qimv1.Ping{Foreground: true})
	if err != nil {
		return
	}
	beat := rr.members[0].l.beat / 2
	t := time.NewTicker(beat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for _, m := range rr.members {
				if ctx.Err() != nil {
					return
				}
				_ = m.l.w.Send(ctx, wire.Message{Opcode: contract.OpPing, Payload: payload})
			}
		}
	}
}

// settle waits for the trailing broadcasts: until every expected delivery arrived, nothing
// arrived for roomSettleIdle, or SettleTimeout.
func (rr *roomRun) settle(ctx context.Context) {
	deadline := time.Now().Add(rr.r.cfg.SettleTimeout)
	last, lastAt := rr.delivered.Load(), time.Now()
	for time.Now().Before(deadline) && ctx.Err() == nil {
		// Answers still pending count as expected once they arrive; a pending one keeps us here.
		if d := rr.delivered.Load(); d >= rr.expected.Load() && rr.pending() == 0 {
			return
		} else if d != last {
			last, lastAt = d, time.Now()
		} else if time.Since(lastAt) > roomSettleIdle {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pending counts publishes not yet answered.
func (rr *roomRun) pending() int {
	n := 0
	for _, m := range rr.senders {
		m.mu.Lock()
		n += len(m.pending)
		m.mu.Unlock()
	}
	return n
}
