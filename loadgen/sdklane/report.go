package sdklane

import (
	"fmt"
	"strings"
	"time"

	"github.com/qim-dev/qim/loadgen"
)

// reportInfo is what the verdict needs besides the per-direction counts.
type reportInfo struct {
	clients  int
	verified bool // the lane ran to its verification (ctx did not end first)
	complete bool // the settle wait ended because everything was accounted for
	waited   time.Duration
	stats    laneStats
	dir      string
}

const maxFailingNamed = 3

// buildReport sums the directions (counts[i] is client i's sends to its peer i^1) and decides
// the verdict: the lane passes only when it was verified and every direction is clean.
func buildReport(counts []flowCounts, info reportInfo) loadgen.LaneReport {
	rep := loadgen.LaneReport{Clients: info.clients, Verified: info.verified}
	var failing []string
	var pending, stray int64
	bad := 0
	for i, c := range counts {
		rep.Sent += c.Sent
		rep.Acked += c.Committed
		rep.Failed += c.Failed
		rep.Received += c.Received
		rep.Missing += c.Missing
		rep.Repeated += c.Repeated
		pending += c.Pending
		stray += c.Stray
		if !c.ok() {
			bad++
			if len(failing) < maxFailingNamed {
				failing = append(failing, c.describe(i, i^1))
			} else if len(failing) == maxFailingNamed {
				failing = append(failing, "…")
			}
		}
	}
	rep.Passed = info.verified && bad == 0 && len(counts) > 0
	settled := "complete"
	if !info.complete {
		settled = "timed out"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d pairs, %d of %d directions clean; %d failed, %d never committed, %d stray; settle %.1f s (%s); SDK: %d reconnects, %d disconnects, %d SEND frames, %d rebuilds, event backlog peak %d",
		len(counts)/2, len(counts)-bad, len(counts), rep.Failed, pending, stray, info.waited.Seconds(), settled,
		info.stats.reconnects, info.stats.offline, info.stats.sendFrames, info.stats.rebuilds, info.stats.backlogPeak)
	if info.stats.stopped > 0 {
		fmt.Fprintf(&b, "; %d clients stopped for good", info.stats.stopped)
	}
	if !info.verified {
		b.WriteString("; interrupted before the verification finished")
	}
	if len(failing) > 0 {
		fmt.Fprintf(&b, "; failing: %s", strings.Join(failing, "; "))
	}
	if !rep.Passed && info.dir != "" {
		fmt.Fprintf(&b, "; client stores kept in %s", info.dir)
	}
	rep.Detail = b.String()
	return rep
}
