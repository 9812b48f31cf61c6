package gates

import (
	"fmt"
	"maps"
	"slices"
)

// Bounds of the soak's footprint checks. A process series is bounded when the highest value of
// the run's last third is at most the highest of its middle third times (1 + rel) plus abs: a
// leak grows through the last third, while warm-up (pools filling, caches, the JIT-free Go heap
// finding its size) happens in the first third, which is left out. The absolute part keeps a
// small, idle series (a notify process at 20 goroutines) from failing on noise.
const (
	soakRSSRel, soakRSSAbs                     = 0.25, 32 << 20
	soakFDRel, soakFDAbs                       = 0.10, 16
	soakGoroutineRel, soakGoroutineAbs         = 0.10, 64
	soakStorePerMsgRatio                       = 1.5 // second half's bytes per commit over the first half's
	soakMinSamples                             = 9   // three per third
	soakStoreMinCommits                float64 = 1000
)

// soakSeries names one value of a process sample.
type soakSeries struct {
	name     string
	bytes    bool
	rel, abs float64
	value    func(soakProcSample) float64
}

var soakProcSeries = []soakSeries{
	{"resident memory", true, soakRSSRel, soakRSSAbs, func(p soakProcSample) float64 { return p.RSSBytes }},
	{"open file descriptors", false, soakFDRel, soakFDAbs, func(p soakProcSample) float64 { return p.OpenFDs }},
	{"goroutines", false, soakGoroutineRel, soakGoroutineAbs, func(p soakProcSample) float64 { return p.Goroutines }},
}

// judgeFootprint records the soak's footprint checks: every process series bounded, and every
// store growing no faster per committed message in the second half than in the first.
func judgeFootprint(r *Result, samples []soakSample, failedSamples int) {
	if !r.Check("soak evidence", len(samples) >= soakMinSamples, "%d samples (%d with a failed part); at least %d needed to judge thirds",
		len(samples), failedSamples, soakMinSamples) {
		return
	}
	xs := make([]float64, len(samples))
	for i, s := range samples {
		xs[i] = s.AtS
	}
	for _, name := range slices.Sorted(maps.Keys(samples[0].Procs)) {
		for _, ser := range soakProcSeries {
			ys := make([]float64, len(samples))
			for i, s := range samples {
				ys[i] = ser.value(s.Procs[name])
			}
			judgeBounded(r, name+" "+ser.name, ser.bytes, xs, ys, ser.rel, ser.abs)
		}
	}
	commits := make([]float64, len(samples))
	for i, s := range samples {
		commits[i] = s.Commits
	}
	for _, st := range []struct {
		name  string
		value func(soakSample) float64
	}{{"redis-core used_memory", func(s soakSample) float64 { return s.RedisCoreBytes }},
		{"redis-mailbox used_memory", func(s soakSample) float64 { return s.RedisMailboxBytes }},
		{"broker log dirs", func(s soakSample) float64 { return s.KafkaBytes }},
		{"CQL data dir", func(s soakSample) float64 { return s.CQLBytes }}} {
		ys := make([]float64, len(samples))
		for i, s := range samples {
			ys[i] = st.value(s)
		}
		judgeStore(r, st.name, commits, ys)
	}
}

// judgeBounded: see the constants. The slope over the second half is reported, per hour.
func judgeBounded(r *Result, what string, bytes bool, xs, ys []float64, rel, abs float64) {
	n := len(ys)
	if slices.Min(ys) < 0 {
		r.Check(what+" bounded", false, "a sample failed to scrape it")
		return
	}
	mid, last := slices.Max(ys[n/3:2*n/3]), slices.Max(ys[2*n/3:])
	limit := mid*(1+rel) + abs
	r.Check(what+" bounded", last <= limit, "last third's max %s ≤ %s (middle third's max %s + %.0f %% + %s); second-half slope %s/h",
		human(bytes, last), human(bytes, limit), human(bytes, mid), rel*100, human(bytes, abs), human(bytes, slope(xs[n/2:], ys[n/2:])*3600))
}

// judgeStore: the store's growth per committed message in the second half is at most
// soakStorePerMsgRatio times the first half's. A store that grows with what it retains grows
// per message at a constant rate; one that grows faster leaks (or never compacts).
func judgeStore(r *Result, what string, commits, ys []float64) {
	n := len(ys)
	if slices.Max(ys) <= 0 {
		r.Skip(what+" per message", "not on this stack")
		return
	}
	if slices.Min(ys) < 0 {
		r.Check(what+" per message", false, "a sample failed to read it")
		return
	}
	dc1, dc2 := commits[n/2]-commits[0], commits[n-1]-commits[n/2]
	if dc1 < soakStoreMinCommits || dc2 < soakStoreMinCommits {
		r.Check(what+" per message", false, "%.0f and %.0f commits in the halves: too few to judge (%.0f each needed)", dc1, dc2, soakStoreMinCommits)
		return
	}
	b1, b2 := (ys[n/2]-ys[0])/dc1, (ys[n-1]-ys[n/2])/dc2
	ok := b2 <= max(b1, 0)*soakStorePerMsgRatio+64 // +64 B: a store that did not grow at all
	r.Check(what+" per message", ok, "%.0f B per commit in the second half against %.0f in the first (at most ×%.1f); %s at the end",
		b2, b1, soakStorePerMsgRatio, human(true, ys[n-1]))
}

// slope is the least-squares slope of ys over xs.
func slope(xs, ys []float64) float64 {
	n := float64(len(xs))
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx, sy, sxx, sxy = sx+xs[i], sy+ys[i], sxx+xs[i]*xs[i], sxy+xs[i]*ys[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}

// human prints bytes as MiB and counts as counts.
func human(bytes bool, v float64) string {
	if bytes {
		return fmt.Sprintf("%.1f MiB", v/(1<<20))
	}
	return fmt.Sprintf("%.1f", v)
}
