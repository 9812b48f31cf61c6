package audit

import "time"

// meter reports one pass's progress. It reads the clock once per 1,024 ticks, so it costs
// nothing measurable per record.
type meter struct {
	pass  string
	start time.Time
	next  time.Time
	every time.Duration
	fn    func(Progress)
	count func() int64
	ticks int
}

func newMeter(pass string, cfg *Config, count func() int64) *meter {
	now := time.Now()
	return &meter{pass: pass, start: now, next: now.Add(cfg.ProgressEvery), every: cfg.ProgressEvery,
		fn: cfg.Progress, count: count}
}

func (m *meter) tick() {
	m.ticks++
	if m.fn == nil || m.ticks&1023 != 0 {
		return
	}
	if now := time.Now(); now.After(m.next) {
		m.next = now.Add(m.every)
		m.fn(m.progress(now, false))
	}
}

// done sends the pass's last report and returns its throughput.
func (m *meter) done() PassStats {
	now := time.Now()
	p := m.progress(now, true)
	if m.fn != nil {
		m.fn(p)
	}
	return PassStats{Records: p.Records, Seconds: p.Elapsed.Seconds(), RecordsPS: p.Rate}
}

func (m *meter) progress(now time.Time, done bool) Progress {
	el := now.Sub(m.start)
	n := m.count()
	var rate float64
	if el > 0 {
		rate = float64(n) / el.Seconds()
	}
	return Progress{Pass: m.pass, Records: n, Rate: rate, Elapsed: el, Done: done}
}
