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
	delivered := r.ctr.delivered.Load()
	nextPoke := start
	for {
		m := missingIn(conns)
		now := time.Now()
		if m == 0 {
			rep.Complete = true
			break
		}
		if d := r.ctr.delivered.Load(); m < best || d > delivered {
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
		n += int64(c.out.missing())
	}
	return n
}
