package chaos

import (
	"context"
	"time"

	"github.com/qim-dev/qim/loadgen"
)

// sendsGoOnShare is the share of the sends offered while the fault was open that must be
// acknowledged in the same windows for "sends go on": an open-model load keeps offering at the
// rate, so a commit path that waited on the failed tier would fall far below it.
const sendsGoOnShare = 0.9

func (w *trimWatch) judge(ctx context.Context, res *CellResult, fr *faultRun, rep *loadgen.Report) {
	if w.sendsGoOn {
		judgeSendsGoOn(res, rep, fr)
	}
	atHeal := w.countAt(fr.healAt)
	resumed := w.waitTrimmedAbove(ctx, atHeal)
	samples := w.stop()
	w.mu.Lock()
	errs, lastErr := w.errs, w.lastErr
	w.mu.Unlock()
	if !res.check("trim observed", len(samples) > 0, "%d samples of the writer's trim and the archive watermark (%d failed reads, last: %v)",
		len(samples), errs, lastErr) {
		return
	}
	w.judgeBound(res, samples)
	before := w.delta(samples, time.Time{}, fr.faultAt)
	res.check("trim ran before the fault", before > 0, "%.0f hot records trimmed before the fault", before)
	if w.frozenAfter > 0 {
		from := fr.faultAt.Add(w.frozenAfter)
		n := w.countIn(samples, from, fr.healAt)
		moved := w.delta(samples, from, fr.healAt)
		res.check("trim stopped with the archive", n >= 2 && moved == 0,
			"%.0f hot records trimmed from %s after the fault until the heal (%d samples): the watermark froze, so must the trim",
			moved, w.frozenAfter, n)
	}
	res.check("trim resumed after the heal", resumed, "trimmed total %.0f at the heal, %.0f at the end", atHeal, samples[len(samples)-1].trimmed)
}

// judgeBound: the cutoff never came within margin of T.
func (w *trimWatch) judgeBound(res *CellResult, samples []trimSample) {
	worst, checked := -1e18, 0
	for _, s := range samples {
		if s.cutoffMs <= 0 {
			continue // no tick yet, or held without a watermark
		}
		checked++
		worst = max(worst, s.cutoffMs-(s.watermarkMs-float64(w.margin.Milliseconds())))
	}
	res.check("trim bounded by the archive watermark", checked > 0 && worst <= 0,
		"%d samples with a cutoff; the cutoff's closest approach to T − %s: %.0f ms (must be ≤ 0)", checked, w.margin, worst)
}

// waitTrimmedAbove waits until a sample shows more than n trimmed, within trimResumeWait.
func (w *trimWatch) waitTrimmedAbove(ctx context.Context, n float64) bool {
	deadline := time.Now().Add(trimResumeWait)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		w.mu.Lock()
		last := len(w.samples) > 0 && w.samples[len(w.samples)-1].trimmed > n
		w.mu.Unlock()
		if last {
			return true
		}
		time.Sleep(trimSampleEvery)
	}
	return false
}

// countAt is the trimmed total of the last sample at or before t.
func (w *trimWatch) countAt(t time.Time) float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var n float64
	for _, s := range w.samples {
		if s.at.After(t) {
			break
		}
		n = s.trimmed
	}
	return n
}

// delta is how much the trimmed total moved between the first and last samples in [from, to].
func (w *trimWatch) delta(samples []trimSample, from, to time.Time) float64 {
	first, last, seen := 0.0, 0.0, false
	for _, s := range samples {
		if s.at.Before(from) || s.at.After(to) {
			continue
		}
		if !seen {
			first, seen = s.trimmed, true
		}
		last = s.trimmed
	}
	return last - first
}

func (w *trimWatch) countIn(samples []trimSample, from, to time.Time) int {
	n := 0
	for _, s := range samples {
		if !s.at.Before(from) && !s.at.After(to) {
			n++
		}
	}
	return n
}

// judgeSendsGoOn: the load windows inside the open fault acknowledged what they offered.
func judgeSendsGoOn(res *CellResult, rep *loadgen.Report, fr *faultRun) {
	windows, sent, acked := sendsBetween(rep, fr.faultAt, fr.healAt)
	ok := windows >= 5 && sent > 0 && float64(acked) >= sendsGoOnShare*float64(sent)
	res.check("sends go on during the fault", ok, "%d load windows inside the fault: %d sent, %d acknowledged (must be ≥ %.0f %%)",
		windows, sent, acked, sendsGoOnShare*100)
}

// sendsBetween sums the load windows of the run phase that lie wholly between from and to.
func sendsBetween(rep *loadgen.Report, from, to time.Time) (windows int, sent, acked int64) {
	fromS, toS := from.Sub(rep.StartedAt).Seconds(), to.Sub(rep.StartedAt).Seconds()
	for _, win := range rep.Timeline {
		if win.Phase != "run" || win.EndS-win.DurS < fromS || win.EndS > toS {
			continue
		}
		windows++
		sent += win.Sent
		acked += win.Acked
	}
	return windows, sent, acked
}
