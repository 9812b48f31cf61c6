package loadgen

import (
	"context"
	"time"
)

// settle waits, after the window, until every ACKed message has been pulled by its recipient,
// or until SettleTimeout, or until SettleIdle passed without progress — neither a missing
// message arriving nor any first delivery (late SEND_ACKs of an overloaded system can grow the
// missing count while the backlog is still draining, which is progress, not loss).
// Every second it asks each recipient for a pull round, because a message whose push was
// dropped (push is best effort) is otherwise only fetched with the next push — and after the
// window there may be none. What is still missing afterwards is reported as missing: the
// bounded wait is what turns "late" into "lost" for the checker.
func (r *runState) settle(ctx context.Context, conns []*lgConn) SettleReport {
	start := time.Now()
	rep := SettleReport{MissingAtStart: missingIn(conns)}
	best, lastProgress := rep.MissingAtStart, start
	delivered := r.probe.delivered.Load()
	nextPoke := start
	for {
		m := missingIn(conns)
		now := time.Now()
		if m == 0 {
			rep.Complete = true
			break
		}
		if d := r.probe.delivered.Load(); m < best || d > delivered {
			best, delivered, lastProgress = min(best, m), d, now
		}
		if now.Sub(lastProgress) > r.cfg.SettleIdle || now.Sub(start) > r.cfg.SettleTimeout || ctx.Err() != nil {
			break
		}
		if !now.Before(nextPoke) {
			for _, c := range conns {
				c.wantPull()
			}
			nextPoke = now.Add(time.Second)
		}
		time.Sleep(100 * time.Millisecond)
	}
	rep.WaitedS = time.Since(start).Seconds()
	return rep
}

// missingIn sums the ACKed-but-not-pulled messages of every flow.
func missingIn(conns []*lgConn) int64 {
	var n int64
	for _, c := range conns {
		n += int64(c.role.ledger().missing())
	}
	return n
}

// drainForHistory runs, with a history recorder only, after the settle wait and before the
// durable history is read: it keeps asking every connection for pull rounds until the history
// stopped growing for historyQuiet (at most historyDrainMax). The settle wait ends when every
// peer message arrived, but a sender's own copies (materialized in its own mailbox shard) and
// committed sends of unknown outcome are not in its ledger; without this drain the checker
// would see the tail of those as holes.
func (r *runState) drainForHistory(ctx context.Context, conns []*lgConn) {
	start := time.Now()
	last, lastChange := r.hist.Len(), start
	for time.Since(lastChange) < historyQuiet && time.Since(start) < historyDrainMax && ctx.Err() == nil {
		for _, c := range conns {
			c.wantPull()
		}
		time.Sleep(250 * time.Millisecond)
		if n := r.hist.Len(); n != last {
			last, lastChange = n, time.Now()
		}
	}
}

// Bounds of drainForHistory.
const (
	historyQuiet    = 2 * time.Second
	historyDrainMax = 15 * time.Second
)
